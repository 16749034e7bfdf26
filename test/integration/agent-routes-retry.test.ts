/**
 * A rule's retry policy reaches the data plane through the agent: an
 * exported HTTPRoute's retry (projected, stored in a real in-process
 * registrar, followed over HTTP/2) and a local class-2 route's retry both
 * appear in `/routes`, in the projection's proto JSON, and survive the
 * agent's last-known cache. Real sockets, real files.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Agent, createAgent } from "../../clients/agent/agent.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { projectServices } from "../../services/common/projector.js";
import { startTestRegistrar } from "../support/in-process-registrar.js";
import { createMemoryObjectSource } from "../support/memory-source.js";
import { versionAt } from "../support/projections.js";

/** What the test started, undone last first (each undo may run twice: stops are idempotent). */
const undo: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of undo.splice(0).reverse()) await step();
});

const service = (name: string): KubeObject => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { namespace: "shop", name },
  spec: { ports: [{ name: "http", port: 80 }] },
});

const routeWithRetry = (name: string, target: string, retry: object): KubeObject => ({
  apiVersion: "gateway.networking.k8s.io/v1",
  kind: "HTTPRoute",
  metadata: { namespace: "shop", name },
  spec: {
    parentRefs: [{ group: "", kind: "Service", name: target }],
    rules: [{ backendRefs: [{ name: target, port: 80 }], retry }],
  },
});

interface RoutesJson {
  services: { service: string; source: string; projection: { routes: { rules: unknown[] }[] } }[];
}

/** The first rule's `retry` of each service in a `/routes` document. */
function retries(body: string): Record<string, unknown> {
  const table = JSON.parse(body) as RoutesJson;
  return Object.fromEntries(
    table.services.map((s) => [
      `${s.service} (${s.source})`,
      (s.projection.routes[0]?.rules[0] as { retry?: unknown } | undefined)?.retry,
    ]),
  );
}

async function routesOf(agent: Agent): Promise<string> {
  const response = await fetch(`${agent.routesAddress?.url as string}/routes`);
  expect(response.status).toBe(200);
  return response.text();
}

describe("agent: retry policies in the route table", () => {
  it("serves exported and local retry policies at /routes and keeps them in its cache", async () => {
    const registrar = await startTestRegistrar(["--cluster", "hub"]);
    undo.push(() => registrar.stop());
    const exported = projectServices(
      [service("a"), routeWithRetry("a-route", "a", { codes: [503, 500], attempts: 2 })],
      { exportAll: true },
    );
    expect(exported.rejections).toEqual([]);
    const projection = exported.projections[0];
    if (projection === undefined) throw new Error("no projection of shop/a");
    await registrar.registrar.store.put({ ...projection, version: versionAt(1) });

    const local = createMemoryObjectSource([
      service("b"),
      routeWithRetry("b-route", "b", { backoff: "250ms" }),
    ]);
    const cacheDir = await mkdtemp(join(tmpdir(), "aether-agent-retry-"));
    undo.push(() => rm(cacheDir, { recursive: true, force: true }));
    const options = {
      registrar: registrar.url,
      cluster: "spoke",
      dependencies: ["shop/a", "shop/b"],
      listen: { host: "127.0.0.1", port: 0 },
      localSource: local,
      cacheDir,
    };
    const agent = createAgent(options);
    undo.push(() => agent.stop());
    await agent.start();
    await agent.whenReady();
    const want = {
      "shop/a (imported)": { codes: [500, 503], attempts: 2 },
      "shop/b (local)": { backoff: "0.250s" },
    };
    expect(retries(await routesOf(agent))).toEqual(want);

    // A restarted agent whose registrar is gone serves the same policies from its cache.
    await agent.stop();
    await registrar.stop();
    const restarted = createAgent({
      ...options,
      localSource: createMemoryObjectSource(local.snapshot()),
    });
    undo.push(() => restarted.stop());
    await restarted.start();
    await restarted.whenReady();
    expect(retries(await routesOf(restarted))).toEqual(want);
  });
});
