/**
 * A rule's retry policy and a Service's HTTP filters reach the data plane
 * through the agent: an exported HTTPRoute's retry and an exported
 * HTTPFilter (projected, stored in a real in-process registrar, followed
 * over HTTP/2), and a local class-2 route's retry and filter, all appear in
 * `/routes`, in the projection's proto JSON, in run order, and survive the
 * agent's last-known cache. A local HTTPFilter only named by a route's
 * ExtensionRef stays a reference. Real sockets, real files.
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../services/common/kube-object.js";
import { projectServices } from "../../services/common/projector.js";
import { routesBeforeAndAfterRestart } from "../support/agent-route-table.js";

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

describe("agent: retry policies and HTTP filters in the route table", () => {
  it("serves exported and local retry policies and filters at /routes and keeps them in its cache", async () => {
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
    const local = [
      service("b"),
      routeWithRetry("b-route", "b", { backoff: "250ms" }),
      httpFilter("b-headers", "b", { headerMutation: { response: { remove: ["server"] } } }),
      httpFilter("b-caller-side", undefined, { lua: { source: "-- caller side" } }),
    ];
    const { live, cached } = await routesBeforeAndAfterRestart(projection, local, [
      "shop/a",
      "shop/b",
    ]);
    const want = {
      "shop/a (imported)": { codes: [500, 503], attempts: 2 },
      "shop/b (local)": { backoff: "0.250s" },
    };
    expect(retries(live)).toEqual(want);
    const wantFilters = {
      "shop/a (imported)": ["a-authz", "a-stats"],
      "shop/b (local)": ["b-headers"],
    };
    expect(filters(live)).toEqual(wantFilters);
    const table = JSON.parse(live) as RoutesJson;
    expect(table.services[0]?.projection.httpFilters?.[0]).toMatchObject({
      phase: "HTTP_FILTER_PHASE_AUTHZ",
      targets: [{ service: "shop/a" }],
      extAuthz: {
        backend: { service: "shop/a", port: 80 },
        failureMode: "EXTENSION_FAILURE_MODE_DENY",
      },
    });
    expect(live).not.toContain("caller side");

    // A restarted agent whose registrar is gone serves the same policies from its cache.
    expect(retries(cached)).toEqual(want);
    expect(filters(cached)).toEqual(wantFilters);
  });
});
