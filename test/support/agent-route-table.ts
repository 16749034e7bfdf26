/**
 * Follows one exported projection and some local (class-2) objects through a
 * real agent: a real in-process registrar holds the projection, the agent
 * follows it over HTTP/2 with a last-known cache in a temp dir, and its
 * `/routes` is read; then the agent and the registrar stop and a restarted
 * agent (cache only) is read again. For tests of what the route table carries.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Agent, createAgent } from "../../clients/agent/agent.js";
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { projectServices } from "../../services/common/projector.js";
import { startTestRegistrar } from "./in-process-registrar.js";
import { createMemoryObjectSource } from "./memory-source.js";
import { versionAt } from "./projections.js";

async function routesOf(agent: Agent): Promise<string> {
  const response = await fetch(`${agent.routesAddress?.url as string}/routes`);
  if (response.status !== 200) throw new Error(`/routes answered ${response.status}`);
  return response.text();
}

/**
 * Returns the agent's `/routes` body while its registrar serves `exported`
 * (stored at version 1) and, after a restart with the registrar gone, from
 * its cache. `local` is its local source; `dependencies` its dependency set.
 * Everything started is stopped (and the temp dir removed) before it
 * resolves or rejects.
 */
export async function routesBeforeAndAfterRestart(
  exported: ServiceConfigProjection,
  local: readonly KubeObject[],
  dependencies: readonly string[],
): Promise<{ live: string; cached: string }> {
  const undo: (() => Promise<void>)[] = [];
  try {
    const registrar = await startTestRegistrar(["--cluster", "hub"]);
    undo.push(() => registrar.stop());
    await registrar.registrar.store.put({ ...exported, version: versionAt(1) });
    const cacheDir = await mkdtemp(join(tmpdir(), "aether-agent-table-"));
    undo.push(() => rm(cacheDir, { recursive: true, force: true }));
    const options = {
      registrar: registrar.url,
      cluster: "spoke",
      dependencies: [...dependencies],
      listen: { host: "127.0.0.1", port: 0 },
      localSource: createMemoryObjectSource([...local]),
      cacheDir,
    };
    const agent = createAgent(options);
    undo.push(() => agent.stop());
    await agent.start();
    await agent.whenReady();
    const live = await routesOf(agent);
    await agent.stop();
    await registrar.stop();
    const restarted = createAgent({
      ...options,
      localSource: createMemoryObjectSource([...local]),
    });
    undo.push(() => restarted.stop());
    await restarted.start();
    await restarted.whenReady();
    return { live, cached: await routesOf(restarted) };
  } finally {
    for (const step of undo.reverse()) await step();
  }
}

/**
 * A Service `shop/name` with one named port and an HTTPRoute attaching to
 * it (which brings it into scope under `exportAll` and at an agent).
 */
export function serviceWithRoute(name: string, port: { name: string; port: number }): KubeObject[] {
  return [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { namespace: "shop", name },
      spec: { ports: [port] },
    },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { namespace: "shop", name: `${name}-route` },
      spec: {
        parentRefs: [{ group: "", kind: "Service", name }],
        rules: [{ backendRefs: [{ name, port: port.port }] }],
      },
    },
  ];
}

/**
 * One field of each entry's projection in a `/routes` document (JSON names,
 * for example `backendTls`), keyed `service (source)`.
 */
export function projectionFieldOf(body: string, field: string): Record<string, unknown> {
  const table = JSON.parse(body) as {
    services: { service: string; source: string; projection: Record<string, unknown> }[];
  };
  return Object.fromEntries(
    table.services.map((s) => [`${s.service} (${s.source})`, s.projection[field]]),
  );
}

/**
 * The one projection `objects` give under `exportAll`; throws when the
 * projector rejects anything or projects no service.
 */
export function exportedProjection(objects: readonly KubeObject[]): ServiceConfigProjection {
  const exported = projectServices(objects, { exportAll: true });
  if (exported.rejections.length > 0) {
    throw new Error(`rejected: ${exported.rejections.map((r) => r.message).join("; ")}`);
  }
  const projection = exported.projections[0];
  if (projection === undefined) throw new Error("no projection");
  return projection;
}
