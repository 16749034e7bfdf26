/**
 * MeshConfig (mesh.aether.dev/v1alpha1, cluster-scoped) on the projection,
 * table-driven: a valid `default` becomes the origin's mesh record `@mesh`
 * (carrying only `meshConfig`, defaults filled in), every invalid one is
 * rejected with its reason, any other name is rejected, the output is
 * deterministic, and the incremental projector equals a full projection
 * byte for byte through random edits, a deleted MeshConfig removing `@mesh`.
 */
import { type JsonValue, toBinary, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { mulberry32 } from "../../services/common/mulberry32.js";
import { projectServices, ROUTE_REJECTION_REASONS } from "../../services/common/projector.js";
import { createIncrementalProjector } from "../../services/common/projector-incremental.js";
import { checkIncrementalAgainstFull, objectEditor } from "../support/incremental-vs-full.js";
import { kubeService, serviceExport } from "../support/kube-objects.js";

/** A MeshConfig named `name` (cluster-scoped unless `namespace`) with `spec`. */
function meshConfig(name: string, spec?: unknown, namespace?: string): KubeObject {
  const metadata = namespace === undefined ? { name } : { name, namespace };
  return { apiVersion: "mesh.aether.dev/v1alpha1", kind: "MeshConfig", metadata, spec };
}

const WORLD: KubeObject[] = [
  kubeService("web", "shop", [{ name: "http", port: 80 }]),
  serviceExport("web", "shop"),
];

const FULL_SPEC = {
  requestTimeout: "15s",
  retry: { codes: [503, 502], attempts: 2, backoff: "100ms" },
  retryBudget: { percent: 20, minRetryConcurrency: 3 },
  outlierDetection: {
    consecutive5xxErrors: 5,
    interval: "10s",
    baseEjectionTime: "30s",
    maxEjectionPercent: 50,
  },
};

/** The mesh record of `objects` as proto JSON, or undefined when there is none. */
function meshRecordOf(objects: KubeObject[], exportAll = false): JsonValue | undefined {
  const found = projectServices(objects, { exportAll }).projections.find(
    (p) => p.service === "@mesh",
  );
  return found === undefined ? undefined : toJson(ServiceConfigProjectionSchema, found);
}

describe("projector: a MeshConfig named default becomes the mesh record @mesh", () => {
  const cases: [string, unknown, JsonValue][] = [
    [
      "every field",
      FULL_SPEC,
      {
        ...FULL_SPEC,
        name: "default",
        retry: { codes: [502, 503], attempts: 2, backoff: "0.100s" },
      },
    ],
    ["no spec: the data plane's defaults", undefined, { name: "default" }],
    [
      "a request timeout of 0s (none)",
      { requestTimeout: "0s" },
      { name: "default", requestTimeout: "0s" },
    ],
    ["an empty retry is kept (connection errors)", { retry: {} }, { name: "default", retry: {} }],
    [
      "a retry budget's minimum concurrency defaults to Envoy's 3",
      { retryBudget: { percent: 25 } },
      { name: "default", retryBudget: { percent: 25, minRetryConcurrency: 3 } },
    ],
    [
      "outlier detection's omitted fields default to Istio's",
      { outlierDetection: { consecutive5xxErrors: 0 } },
      {
        name: "default",
        outlierDetection: { interval: "10s", baseEjectionTime: "30s", maxEjectionPercent: 10 },
      },
    ],
  ];
  for (const [name, spec, expected] of cases) {
    it(name, () => {
      const objects = [...WORLD, meshConfig("default", spec)];
      expect(meshRecordOf(objects)).toEqual({ service: "@mesh", meshConfig: expected });
      expect(meshRecordOf(objects, true)).toEqual({ service: "@mesh", meshConfig: expected });
      expect(projectServices(objects).rejections).toEqual([]);
    });
  }

  it("sorts among the services, and none without a MeshConfig", () => {
    const early = kubeService("web", "0ns", [{ name: "http", port: 80 }]);
    const objects = [...WORLD, early, serviceExport("web", "0ns"), meshConfig("default", {})];
    const services = projectServices(objects).projections.map((p) => p.service);
    expect(services).toEqual(["0ns/web", "@mesh", "shop/web"]);
    expect(projectServices(WORLD).projections.map((p) => p.service)).toEqual(["shop/web"]);
  });

  it("is deterministic: the same objects in any order give the same bytes", () => {
    const objects = [...WORLD, meshConfig("default", FULL_SPEC), meshConfig("other", {})];
    const bytes = (list: KubeObject[]) =>
      projectServices(list).projections.map((p) => toBinary(ServiceConfigProjectionSchema, p));
    expect(bytes([...objects].reverse())).toEqual(bytes(objects));
  });
});

describe("projector: invalid MeshConfigs are rejected with a reason", () => {
  /** [name, MeshConfig, reason, message, services]. */
  const cases: [string, KubeObject, string, RegExp, string[]][] = [
    ["another name", meshConfig("prod", {}), "invalid_value", /one mesh-wide MeshConfig/, []],
    ["a namespace", meshConfig("default", {}, "shop"), "invalid_object", /cluster-scoped/, []],
    [
      "an unknown field",
      meshConfig("default", { timeout: "1s" }),
      "unsupported_field",
      /spec\.timeout/,
      ["@mesh"],
    ],
    [
      "a spec that is a list",
      meshConfig("default", []),
      "invalid_object",
      /spec must be an object/,
      ["@mesh"],
    ],
    [
      "a bad duration",
      meshConfig("default", { requestTimeout: "15" }),
      "invalid_duration",
      /requestTimeout/,
      ["@mesh"],
    ],
    [
      "a retry code out of range",
      meshConfig("default", { retry: { codes: [302] } }),
      "invalid_value",
      /400 and 599/,
      ["@mesh"],
    ],
    [
      "negative attempts",
      meshConfig("default", { retry: { attempts: -1 } }),
      "invalid_value",
      /attempts/,
      ["@mesh"],
    ],
    [
      "a budget of 0%",
      meshConfig("default", { retryBudget: { percent: 0 } }),
      "invalid_value",
      /between 1 and 100/,
      ["@mesh"],
    ],
    [
      "a budget without percent",
      meshConfig("default", { retryBudget: {} }),
      "invalid_object",
      /percent is required/,
      ["@mesh"],
    ],
    [
      "ejecting 101%",
      meshConfig("default", { outlierDetection: { maxEjectionPercent: 101 } }),
      "invalid_value",
      /between 0 and 100/,
      ["@mesh"],
    ],
    [
      "a zero interval",
      meshConfig("default", { outlierDetection: { interval: "0s" } }),
      "invalid_value",
      /longer than 0s/,
      ["@mesh"],
    ],
    [
      "an unknown outlier field",
      meshConfig("default", { outlierDetection: { splitExternal: true } }),
      "unsupported_field",
      /splitExternal/,
      ["@mesh"],
    ],
  ];
  for (const [name, object, reason, message, services] of cases) {
    it(`${name}: ${reason}`, () => {
      const output = projectServices([...WORLD, object]);
      expect(output.rejections.map((r) => [r.route.kind, r.route.namespace, r.reason])).toEqual([
        ["MeshConfig", "", reason],
      ]);
      expect(output.rejections[0]?.message).toMatch(message);
      expect(output.rejections[0]?.services).toEqual(services);
      expect(ROUTE_REJECTION_REASONS).toContain(reason);
      expect(output.projections.map((p) => p.service)).toEqual(["shop/web"]);
    });
  }

  it("a valid default beside another name: the default applies, the other is rejected", () => {
    const objects = [
      ...WORLD,
      meshConfig("zz", {}),
      meshConfig("default", { requestTimeout: "1s" }),
    ];
    expect(meshRecordOf(objects)).toMatchObject({ meshConfig: { requestTimeout: "1s" } });
    expect(projectServices(objects).rejections.map((r) => r.route.name)).toEqual(["zz"]);
  });

  it("two different objects named default: duplicate_object, no mesh record", () => {
    const objects = [...WORLD, meshConfig("default", {}), meshConfig("default", { retry: {} })];
    expect(projectServices(objects).rejections.map((r) => r.reason)).toEqual(["duplicate_object"]);
    expect(meshRecordOf(objects)).toBeUndefined();
  });
});

/** A random edit: a MeshConfig (valid, invalid, renamed, namespaced or deleted) or a Service. */
function edit(next: () => number, objects: readonly KubeObject[]): KubeObject[] {
  const { copy, pick, replace } = objectEditor(next, objects);
  if (next() < 0.7) {
    const name = pick(["default", "default", "other"]);
    const spec = pick([{}, FULL_SPEC, { requestTimeout: `${Math.floor(next() * 9)}s` }, { x: 1 }]);
    const namespaced = next() < 0.1 ? "shop" : undefined;
    replace("MeshConfig", name, next() < 0.2 ? undefined : meshConfig(name, spec, namespaced));
  } else {
    const name = `s${Math.floor(next() * 6)}`;
    const exported = next() < 0.5;
    replace("Service", name, kubeService(name, "shop", [{ name: "http", port: 80 }]));
    replace("ServiceExport", name, exported ? serviceExport(name, "shop") : undefined);
  }
  return copy;
}

describe("incremental projector with MeshConfigs", () => {
  it("adds up to the full projection, byte for byte, after every random edit", () => {
    const filler = Array.from({ length: 12 }, (_, i) => kubeService(`f${i}`, "other", []));
    const incremental = checkIncrementalAgainstFull({}, [...WORLD, ...filler], edit);
    expect(incremental).toBeGreaterThan(10 * 40 * 0.5);
  });

  it("removes @mesh when the MeshConfig is deleted, and brings it back when it returns", () => {
    const filler = Array.from({ length: 12 }, (_, i) => kubeService(`f${i}`, "other", []));
    const projector = createIncrementalProjector();
    const withMesh = [...WORLD, ...filler, meshConfig("default", FULL_SPEC)];
    expect(projector.update(withMesh).projections.map((p) => p.service)).toContain("@mesh");
    const without = projector.update([...WORLD, ...filler]);
    expect([without.full, without.removed, without.projections]).toEqual([false, ["@mesh"], []]);
    expect(projector.services.has("@mesh")).toBe(false);
    const back = projector.update(withMesh);
    expect([back.full, back.projections.map((p) => p.service)]).toEqual([false, ["@mesh"]]);
  });

  it("a seeded shuffle of the world projects the same mesh record", () => {
    const next = mulberry32(7);
    const objects = [...WORLD, meshConfig("default", FULL_SPEC), meshConfig("x", {})];
    const shuffled = [...objects].sort(() => next() - 0.5);
    expect(meshRecordOf(shuffled)).toEqual(meshRecordOf(objects));
  });
});
