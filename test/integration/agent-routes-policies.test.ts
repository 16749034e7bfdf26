/**
 * A rule's retry policy and a Service's HTTP filters reach the data plane
 * through the agent: an exported HTTPRoute's retry and an exported
 * HTTPFilter (projected, stored in a real in-process registrar, followed
 * over HTTP/2), and a local class-2 route's retry and filter, all appear in
 * `/routes`, in the projection's proto JSON, in run order, and survive the
 * agent's last-known cache. A local HTTPFilter only named by a route's
 * ExtensionRef stays a reference. Real sockets, real files.
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

const httpFilter = (name: string, target: string | undefined, spec: object): KubeObject => ({
  apiVersion: "mesh.aether.dev/v1alpha1",
  kind: "HTTPFilter",
  metadata: { namespace: "shop", name },
  spec: {
    ...(target === undefined ? {} : { targetRefs: [{ group: "", kind: "Service", name: target }] }),
    ...spec,
  },
});

interface RoutesJson {
  services: {
    service: string;
    source: string;
    projection: { routes: { rules: unknown[] }[]; httpFilters?: { name: string }[] };
  }[];
}

/** The names of each service's HTTP filters in a `/routes` document, in order. */
function filters(body: string): Record<string, string[]> {
  const table = JSON.parse(body) as RoutesJson;
  return Object.fromEntries(
    table.services.map((s) => [
      `${s.service} (${s.source})`,
      (s.projection.httpFilters ?? []).map((f) => f.name),
    ]),
  );
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

describe("agent: retry policies and HTTP filters in the route table", () => {
  it("serves exported and local retry policies and filters at /routes and keeps them in its cache", async () => {
    const registrar = await startTestRegistrar(["--cluster", "hub"]);
    undo.push(() => registrar.stop());
    const exported = projectServices(
      [
        service("a"),
        routeWithRetry("a-route", "a", { codes: [503, 500], attempts: 2 }),
        httpFilter("a-stats", "a", { phase: "Stats", lua: { source: "-- count" } }),
        httpFilter("a-authz", "a", {
          phase: "AuthZ",
          extAuthz: { backendRef: { name: "a", port: 80 } },
        }),
      ],
      { exportAll: true },
    );
    expect(exported.rejections).toEqual([]);
    const projection = exported.projections[0];
    if (projection === undefined) throw new Error("no projection of shop/a");
    await registrar.registrar.store.put({ ...projection, version: versionAt(1) });

    const local = createMemoryObjectSource([
      service("b"),
      routeWithRetry("b-route", "b", { backoff: "250ms" }),
      httpFilter("b-headers", "b", { headerMutation: { response: { remove: ["server"] } } }),
      httpFilter("b-caller-side", undefined, { lua: { source: "-- caller side" } }),
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
    const wantFilters = {
      "shop/a (imported)": ["a-authz", "a-stats"],
      "shop/b (local)": ["b-headers"],
    };
    const body = await routesOf(agent);
    expect(filters(body)).toEqual(wantFilters);
    const table = JSON.parse(body) as RoutesJson;
    expect(table.services[0]?.projection.httpFilters?.[0]).toMatchObject({
      phase: "HTTP_FILTER_PHASE_AUTHZ",
      targets: [{ service: "shop/a" }],
      extAuthz: {
        backend: { service: "shop/a", port: 80 },
        failureMode: "EXTENSION_FAILURE_MODE_DENY",
      },
    });
    expect(body).not.toContain("caller side");

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
    expect(filters(await routesOf(restarted))).toEqual(wantFilters);
  });
});
