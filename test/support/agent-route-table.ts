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
