/**
 * A service's VirtualHost names reach the data plane through the agent: an
 * exported VirtualHost (projected, stored in a real in-process registrar,
 * followed over HTTP/2) and a local class-2 one both appear in `/routes` as
 * the projection's `virtualHosts`, a local one losing a host name to an
 * older local claim does not, and all of it survives the agent's last-known
 * cache. Real sockets, real files.
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../services/common/kube-object.js";
import {
  exportedProjection,
  projectionFieldOf,
  routesBeforeAndAfterRestart,
  serviceWithRoute as withPort,
} from "../support/agent-route-table.js";

const serviceWithRoute = (name: string) => withPort(name, { name: "http", port: 8080 });
const virtualHosts = (body: string) => projectionFieldOf(body, "virtualHosts");

function virtualHost(name: string, target: string, hostnames: string[], created: string) {
  return {
    apiVersion: "mesh.aether.dev/v1alpha1",
    kind: "VirtualHost",
    metadata: { namespace: "shop", name, creationTimestamp: created },
    spec: { targetRef: { group: "", kind: "Service", name: target }, hostnames },
  } as KubeObject;
}

describe("agent: VirtualHost in the route table", () => {
  it("serves exported and local VirtualHost names at /routes and keeps them in its cache", async () => {
    const projection = exportedProjection([
      ...serviceWithRoute("a"),
      virtualHost("a-names", "a", ["a.shop.example", "*.a.shop.example"], "2026-01-01T00:00:00Z"),
    ]);
    const local = [
      ...serviceWithRoute("b"),
      ...serviceWithRoute("c"),
      virtualHost("b-names", "b", ["b.example.com"], "2026-01-01T00:00:00Z"),
      // Newer, claiming b's name for c: rejected in the agent's cluster, as at an exporter.
      virtualHost("c-names", "c", ["b.example.com", "c.example.com"], "2026-01-02T00:00:00Z"),
    ];
    const { live, cached } = await routesBeforeAndAfterRestart(projection, local, [
      "shop/a",
      "shop/b",
      "shop/c",
    ]);
    const want = {
      "shop/a (imported)": [
        { hostnames: ["*.a.shop.example", "a.shop.example"], namespace: "shop", name: "a-names" },
      ],
      "shop/b (local)": [{ hostnames: ["b.example.com"], namespace: "shop", name: "b-names" }],
      "shop/c (local)": undefined,
    };
    expect(virtualHosts(live)).toEqual(want);
    // A restarted agent whose registrar is gone serves the same names from its cache.
    expect(virtualHosts(cached)).toEqual(want);
  });
});
