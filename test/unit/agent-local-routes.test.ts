/**
 * The agent's local routes are held to the projection limits like exported
 * ones: the routes of a service beyond them are `too_large` rejections.
 */
import { describe, expect, it } from "vitest";
import { projectLocalRoutes } from "../../clients/agent/local-routes.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { DEFAULT_PROJECTION_LIMITS } from "../../services/common/projection-limits.js";

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
});
