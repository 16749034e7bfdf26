import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../services/common/kube-object.js";
import { projectServices } from "../../services/common/projector.js";
import { createStatusMemo, type StatusMemo } from "../../services/common/status-memo.js";
import { planStatusPatches, type StatusInputs } from "../../services/common/status-plan.js";
import { kubeService, serviceExport } from "../support/kube-objects.js";

const NOW = "2026-12-03T10:00:00Z";
const NS = "shop";
const PATH = "/apis/gateway.networking.k8s.io/v1/namespaces/shop/httproutes/r/status";

/** A world of shop/cart, shop/other and route r to cart at resourceVersion 7, its status in sync. */
function inSyncWorld(): StatusInputs {
  const route: KubeObject = {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { namespace: NS, name: "r", resourceVersion: "7", generation: 1 },
    spec: {
      parentRefs: [{ group: "", kind: "Service", name: "cart" }],
      rules: [{ backendRefs: [{ name: "cart", port: 8080 }] }],
    },
  };
  const objects = [
    kubeService("cart", NS, [{ name: "http", port: 8080 }]),
    serviceExport("cart", NS),
    kubeService("other", NS, [{ name: "http", port: 8080 }]),
    serviceExport("other", NS),
    route,
  ];
  const output = projectServices(objects);
  const inputs: StatusInputs = {
    objects,
    services: new Set(output.projections.map((p) => p.service)),
    rejections: output.rejections,
    warnings: output.warnings,
  };
  const [patch] = planStatusPatches(inputs, NOW);
  (route as { status?: unknown }).status = patch?.body.status;
  return inputs;
}

/**
 * `inputs` with route r's status emptied at resourceVersion `rv`: a plan
 * that looks at r finds it out of sync, so a plan without a patch for r
 * proves r was skipped.
 */
function tampered(inputs: StatusInputs, rv = "7"): StatusInputs {
  return {
    ...inputs,
    objects: inputs.objects.map((o) =>
      o.kind === "HTTPRoute"
        ? ({ ...o, metadata: { ...o.metadata, resourceVersion: rv }, status: {} } as KubeObject)
        : o,
    ),
  };
}

/** A memo that found route r of `world` in sync (resourceVersion 7). */
function remembering(world: StatusInputs): StatusMemo {
  const memo = createStatusMemo();
  expect(planStatusPatches(world, NOW, memo)).toEqual([]);
  expect(memo.size).toBe(1);
  return memo;
}

const CASES: {
  name: string;
  next: (world: StatusInputs, memo: StatusMemo) => StatusInputs;
  planned: boolean;
}[] = [
  { name: "unchanged: skipped", next: (w) => tampered(w), planned: false },
  { name: "a new resourceVersion: planned", next: (w) => tampered(w, "8"), planned: true },
  {
    name: "a changed outcome (a rejection of the route for shop/cart): planned",
    next: (w) => ({
      ...tampered(w),
      rejections: [
        {
          route: { kind: "HTTPRoute", namespace: NS, name: "r" },
          reason: "invalid_value",
          message: "spec.rules[0] is wrong",
          services: [`${NS}/cart`],
        },
      ],
    }),
    planned: true,
  },
  {
    // Its status still holds the entry for shop/cart, which is now stale.
    name: "the Service it refers to no longer projected: planned (its entry removed)",
    next: (w) => ({ ...w, services: new Set([`${NS}/other`]) }),
    planned: true,
  },
  {
    name: "the ports of the Service it refers to changed: planned",
    next: (w) => {
      const t = tampered(w);
      const ports = [{ name: "grpc", port: 9090 }];
      return {
        ...t,
        objects: t.objects.map((o) =>
          o.kind === "Service" && o.metadata?.name === "cart" ? kubeService("cart", NS, ports) : o,
        ),
      };
    },
    planned: true,
  },
  {
    name: "a Service it does not refer to stops being projected: skipped",
    next: (w) => ({ ...tampered(w), services: new Set([`${NS}/cart`]) }),
    planned: false,
  },
  {
    name: "its write failed (409 or other): forgotten, planned",
    next: (w, memo) => {
      memo.forget(PATH);
      return tampered(w);
    },
    planned: true,
  },
  {
    name: "pause, resume or a new leadership term: cleared, planned",
    next: (w, memo) => {
      memo.clear();
      return tampered(w);
    },
    planned: true,
  },
];

describe("status memo: what the status plan skips", () => {
  for (const c of CASES) {
    it(c.name, () => {
      const world = inSyncWorld();
      const memo = remembering(world);
      const patches = planStatusPatches(c.next(world, memo), NOW, memo);
      expect(patches.map((p) => p.path)).toEqual(c.planned ? [PATH] : []);
    });
  }

  it("does not remember an object found out of sync: planned again until it is in sync", () => {
    const memo = createStatusMemo();
    const stale = tampered(inSyncWorld(), "8");
    expect(planStatusPatches(stale, NOW, memo)).toHaveLength(1);
    expect(memo.size).toBe(0);
    expect(planStatusPatches(stale, NOW, memo)).toHaveLength(1);
  });

  it("forgets an object remembered in sync once a plan finds it out of sync", () => {
    const world = inSyncWorld();
    const memo = remembering(world);
    expect(planStatusPatches(tampered(world, "8"), NOW, memo)).toHaveLength(1);
    expect(memo.size).toBe(0);
  });

  it("forgets an object no longer in the snapshot", () => {
    const world = inSyncWorld();
    const memo = remembering(world);
    const without = { ...world, objects: world.objects.filter((o) => o.kind !== "HTTPRoute") };
    expect(planStatusPatches(without, NOW, memo)).toEqual([]);
    expect(memo.size).toBe(0);
    expect(planStatusPatches(tampered(world), NOW, memo)).toHaveLength(1);
  });

  it("plans the same patches with a memo as without one", () => {
    const world = tampered(inSyncWorld(), "8");
    expect(planStatusPatches(world, NOW, createStatusMemo())).toEqual(
      planStatusPatches(world, NOW),
    );
  });
});
