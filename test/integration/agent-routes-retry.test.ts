/**
 * A rule's retry policy reaches the data plane through the agent: an
 * exported HTTPRoute's retry (projected, stored in a real in-process
 * registrar, followed over HTTP/2) and a local class-2 route's retry both
 * appear in `/routes`, in the projection's proto JSON, and survive the
 * agent's last-known cache. Real sockets, real files.
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

describe("agent: retry policies in the route table", () => {
  it("serves exported and local retry policies at /routes and keeps them in its cache", async () => {
    const exported = projectServices(
      [service("a"), routeWithRetry("a-route", "a", { codes: [503, 500], attempts: 2 })],
      { exportAll: true },
    );
    expect(exported.rejections).toEqual([]);
    const projection = exported.projections[0];
    if (projection === undefined) throw new Error("no projection of shop/a");
    const local = [service("b"), routeWithRetry("b-route", "b", { backoff: "250ms" })];
    const { live, cached } = await routesBeforeAndAfterRestart(projection, local, [
      "shop/a",
      "shop/b",
    ]);
    const want = {
      "shop/a (imported)": { codes: [500, 503], attempts: 2 },
      "shop/b (local)": { backoff: "0.250s" },
    };
    expect(retries(live)).toEqual(want);
    // A restarted agent whose registrar is gone serves the same policies from its cache.
    expect(retries(cached)).toEqual(want);
  });
});
