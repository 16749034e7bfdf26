/**
 * The agent's local routes are held to the projection limits like exported
 * ones: the routes of a service beyond them are `too_large` rejections. A
 * local MeshConfig is local config (the mesh record `@mesh`, without
 * routes), and wins over the imported mesh defaults in the route table.
 */
import { describe, expect, it } from "vitest";
import { projectLocalRoutes } from "../../clients/agent/local-routes.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { DEFAULT_PROJECTION_LIMITS } from "../../services/common/projection-limits.js";
import { mergeRouteTable } from "../../services/common/route-merge.js";
import { meshRecord } from "../support/projections.js";

const service: KubeObject = {
  apiVersion: "v1",
  kind: "Service",
  metadata: { namespace: "shop", name: "web" },
  spec: { ports: [{ port: 80 }] },
};

const route = (i: number): KubeObject =>
  ({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { namespace: "shop", name: `r-${String(i).padStart(3, "0")}` },
    spec: {
      parentRefs: [{ group: "", kind: "Service", name: "web" }],
      rules: [{ backendRefs: [{ name: "web", port: 80 }] }],
    },
  }) as KubeObject;

describe("projectLocalRoutes", () => {
  it("keeps the routes within the limits and rejects the rest as too_large", () => {
    const count = DEFAULT_PROJECTION_LIMITS.maxRoutes + 44;
    const local = projectLocalRoutes([
      service,
      ...Array.from({ length: count }, (_, i) => route(i)),
    ]);
    expect(local.projections.get("shop/web")?.routes).toHaveLength(
      DEFAULT_PROJECTION_LIMITS.maxRoutes,
    );
    expect(local.rejections).toHaveLength(44);
    expect(new Set(local.rejections.map((r) => r.reason))).toEqual(new Set(["too_large"]));
    expect(local.rejections[0]?.route.name).toBe("r-256");
  });

  it("keeps a local MeshConfig as the mesh record, which wins over the imported one whole", () => {
    const meshConfig = {
      apiVersion: "mesh.aether.dev/v1alpha1",
      kind: "MeshConfig",
      metadata: { name: "default" },
      spec: { requestTimeout: "3s" },
    } as KubeObject;
    const local = projectLocalRoutes([service, route(0), meshConfig]);
    expect([...local.projections.keys()].sort()).toEqual(["@mesh", "shop/web"]);
    expect(local.projections.get("@mesh")?.routes).toEqual([]);
    const imported = meshRecord({ requestTimeout: { seconds: 15n }, retry: { attempts: 2 } });
    const table = mergeRouteTable({
      dependencies: ["shop/web"],
      local: local.projections,
      imported: new Map([["@mesh", { origin: "hub", service: "@mesh", projection: imported }]]),
      cluster: "west",
    });
    expect(table.meshDefaults).toMatchObject({ source: "local", origin: "west" });
    expect(table.meshDefaults?.config.requestTimeout?.seconds).toBe(3n);
    // Whole: nothing of the imported defaults (its retry) is merged in.
    expect(table.meshDefaults?.config.retry).toBeUndefined();
  });
});
