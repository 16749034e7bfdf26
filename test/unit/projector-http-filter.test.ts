/**
 * HTTPFilter (`mesh.aether.dev/v1alpha1`) on the projection, table-driven:
 * each extension carried in its one canonical form, every invalid filter
 * rejected with its reason (and the service keeps its routes), the run order
 * (phase, priority, creation time, name: GEP-713's conflict rule), filters
 * that are not exported (no targetRefs: a route's ExtensionRef resolves them
 * in the caller's cluster; a Service out of scope), determinism, and the
 * incremental projector equal byte for byte to a full projection.
 */
import { type JsonValue, toBinary, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  HttpFilterSchema,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { mulberry32 } from "../../services/common/mulberry32.js";
import {
  type ProjectorOptions,
  projectServices,
  ROUTE_REJECTION_REASONS,
} from "../../services/common/projector.js";
import { createIncrementalProjector } from "../../services/common/projector-incremental.js";
import { extensionRefRoute, kubeService, serviceExport } from "../support/kube-objects.js";

const NS = "shop";
const SHA = "0123456789abcdef".repeat(4);

const PORTS = [
  { name: "http", port: 80 },
  { name: "grpc", port: 9000, appProtocol: "kubernetes.io/h2c" },
];

/** A Service with the two PORTS (and `extra` in its spec). */
function service(name: string, namespace = NS, extra: object = {}): KubeObject {
  return kubeService(name, namespace, PORTS, extra);
}

/** A targetRef to the Service `name` (of the filter's namespace). */
function toService(name: string, sectionName?: string) {
  return {
    group: "",
    kind: "Service",
    name,
    ...(sectionName === undefined ? {} : { sectionName }),
  };
}

function filter(name: string, spec: object, metadata: object = {}): KubeObject {
  return {
    apiVersion: "mesh.aether.dev/v1alpha1",
    kind: "HTTPFilter",
    metadata: { namespace: NS, name, ...metadata },
    spec: { targetRefs: [{ group: "", kind: "Service", name: "web" }], ...spec },
  };
}

const HEADERS = { headerMutation: { request: { set: [{ name: "x-a", value: "1" }] } } };

const WORLD: KubeObject[] = [
  service("web"),
  serviceExport("web", NS),
  service("api"),
  service("authz", "security"),
  service("legacy", NS, { type: "ExternalName", externalName: "legacy.example.com" }),
];

function project(objects: KubeObject[], options: ProjectorOptions = {}) {
  return projectServices([...WORLD, ...objects], options);
}

/** The filters of shop/web as proto JSON. */
function filtersJson(objects: KubeObject[]): JsonValue[] {
  const output = project(objects);
  expect(output.rejections).toEqual([]);
  const web = output.projections.find((p) => p.service === `${NS}/web`);
  return (web?.httpFilters ?? []).map((f) => toJson(HttpFilterSchema, f));
}

describe("projector: an HTTPFilter attached to a Service is carried", () => {
  const target = { service: "shop/web" };
  const cases: [string, object, object, JsonValue][] = [
    [
      "headerMutation, with the defaults (phase Default, priority 0, every port)",
      {
        headerMutation: {
          request: { set: [{ name: "x-a", value: "1" }], remove: ["x-b"] },
          response: { add: [{ name: "x-c", value: "2" }] },
        },
      },
      {},
      {
        namespace: NS,
        name: "f",
        phase: "HTTP_FILTER_PHASE_DEFAULT",
        targets: [target],
        headerMutation: {
          request: { set: [{ name: "x-a", value: "1" }], remove: ["x-b"] },
          response: { add: [{ name: "x-c", value: "2" }] },
        },
      },
    ],
    [
      "lua, in phase AuthN with a priority and a creation time",
      { lua: { source: "function envoy_on_request(h) end" }, phase: "AuthN", priority: -5 },
      { creationTimestamp: "2026-11-01T09:00:00Z" },
      {
        namespace: NS,
        name: "f",
        creationTime: "2026-11-01T09:00:00Z",
        phase: "HTTP_FILTER_PHASE_AUTHN",
        priority: -5,
        targets: [target],
        lua: { source: "function envoy_on_request(h) end" },
      },
    ],
    [
      "wasm from an OCI image: plugin config as canonical JSON (keys sorted), pull policy",
      {
        wasm: {
          url: "oci://registry.example/filters/auth:1.2",
          sha256: SHA,
          pluginConfig: { zeta: [1, { b: true, a: null }], alpha: "x" },
          pullPolicy: "Always",
        },
        phase: "Stats",
      },
      {},
      {
        namespace: NS,
        name: "f",
        phase: "HTTP_FILTER_PHASE_STATS",
        targets: [target],
        wasm: {
          url: "oci://registry.example/filters/auth:1.2",
          sha256: SHA,
          pluginConfigJson: '{"alpha":"x","zeta":[1,{"a":null,"b":true}]}',
          pullPolicy: "WASM_PULL_POLICY_ALWAYS",
        },
      },
    ],
    [
      "wasm from an https URL, no config",
      { wasm: { url: "https://cdn.example/f.wasm", sha256: SHA } },
      {},
      {
        namespace: NS,
        name: "f",
        phase: "HTTP_FILTER_PHASE_DEFAULT",
        targets: [target],
        wasm: { url: "https://cdn.example/f.wasm", sha256: SHA },
      },
    ],
    [
      "extAuthz to a Service of another namespace (mesh rules), timeout, fail open; one port",
      {
        extAuthz: {
          backendRef: { name: "authz", namespace: "security", port: 9000 },
          timeout: "250ms",
          failureMode: "Allow",
        },
        phase: "AuthZ",
        targetRefs: [{ group: "", kind: "Service", name: "web", sectionName: "http" }],
      },
      {},
      {
        namespace: NS,
        name: "f",
        phase: "HTTP_FILTER_PHASE_AUTHZ",
        targets: [{ service: "shop/web", port: 80, sectionName: "http" }],
        extAuthz: {
          backend: { service: "security/authz", port: 9000, appProtocol: "kubernetes.io/h2c" },
          timeout: "0.250s",
          failureMode: "EXTENSION_FAILURE_MODE_ALLOW",
        },
      },
    ],
    [
      "extProc in the filter's namespace: failure mode Deny by default; repeated targets once",
      {
        extProc: { backendRef: { name: "api", port: 80 } },
        targetRefs: [
          { group: "", kind: "Service", name: "web" },
          { group: "", kind: "Service", name: "web" },
          { group: "", kind: "Service", name: "web", sectionName: "grpc" },
        ],
      },
      {},
      {
        namespace: NS,
        name: "f",
        phase: "HTTP_FILTER_PHASE_DEFAULT",
        targets: [target, { service: "shop/web", port: 9000, sectionName: "grpc" }],
        extProc: {
          backend: { service: "shop/api", port: 80 },
          failureMode: "EXTENSION_FAILURE_MODE_DENY",
        },
      },
    ],
  ];
  it.each(cases)("%s", (_name, spec, metadata, want) => {
    expect(filtersJson([filter("f", spec, metadata)])).toEqual([want]);
  });
});

describe("projector: an invalid HTTPFilter is rejected with a reason, the service still projected", () => {
  const cases: [string, KubeObject[], string, RegExp][] = [
    [
      "a target Service that does not exist",
      [
        filter("f", {
          ...HEADERS,
          targetRefs: [toService("web"), toService("gone")],
        }),
      ],
      "unknown_target",
      /spec\.targetRefs\[1\] names Service shop\/gone, which does not exist/,
    ],
    [
      "a sectionName the Service has no port of",
      [
        filter("f", {
          ...HEADERS,
          targetRefs: [{ group: "", kind: "Service", name: "web", sectionName: "admin" }],
        }),
      ],
      "unknown_target",
      /sectionName "admin" of Service shop\/web/,
    ],
    [
      "a sha256 that is not 64 lower-case hex digits",
      [filter("f", { wasm: { url: "oci://r/f:1", sha256: SHA.toUpperCase() } })],
      "invalid_value",
      /spec\.wasm\.sha256 .* is not 64 lower-case hex digits/,
    ],
    [
      "a sha256 one digit short",
      [filter("f", { wasm: { url: "oci://r/f:1", sha256: SHA.slice(1) } })],
      "invalid_value",
      /spec\.wasm\.sha256/,
    ],
    [
      "a wasm module without a sha256",
      [filter("f", { wasm: { url: "oci://r/f:1" } })],
      "invalid_object",
      /spec\.wasm\.sha256 is required/,
    ],
    [
      "a wasm url that is neither https nor oci",
      [filter("f", { wasm: { url: "http://cdn.example/f.wasm", sha256: SHA } })],
      "invalid_value",
      /spec\.wasm\.url/,
    ],
    [
      "a pull policy for an https module",
      [filter("f", { wasm: { url: "https://c/f.wasm", sha256: SHA, pullPolicy: "Always" } })],
      "invalid_value",
      /pullPolicy applies to an oci:\/\/ image only/,
    ],
    [
      "an extension backendRef to a Service that does not exist",
      [filter("f", { extProc: { backendRef: { name: "nope", port: 80 } } })],
      "backend_not_found",
      /spec\.extProc\.backendRef refers to Service shop\/nope, which does not exist/,
    ],
    [
      "an extension backendRef to a port the Service does not have",
      [filter("f", { extAuthz: { backendRef: { name: "api", port: 81 } } })],
      "backend_not_found",
      /port 81 of Service shop\/api/,
    ],
    [
      "an extension backendRef to an ExternalName Service",
      [filter("f", { extAuthz: { backendRef: { name: "legacy", port: 80 } } })],
      "unsupported_backend",
      /ExternalName/,
    ],
    [
      "two extensions (lua and wasm)",
      [filter("f", { lua: { source: "x" }, wasm: { url: "oci://r/f:1", sha256: SHA } })],
      "invalid_filter",
      /exactly one of .*, not lua and wasm/,
    ],
    ["no extension", [filter("f", {})], "invalid_object", /spec must set exactly one of/],
    [
      "a target that is not a Service",
      [
        filter("f", {
          ...HEADERS,
          targetRefs: [
            { ...toService("web"), group: "apps", kind: "Deployment" },
            toService("web"),
          ],
        }),
      ],
      "invalid_kind",
      /spec\.targetRefs\[0\] targets a Deployment\.apps/,
    ],
    [
      "an unknown phase",
      [filter("f", { ...HEADERS, phase: "Early" })],
      "invalid_value",
      /spec\.phase/,
    ],
    [
      "a timeout that is not a Gateway API duration",
      [filter("f", { extProc: { backendRef: { name: "api", port: 80 }, timeout: "1 s" } })],
      "invalid_duration",
      /spec\.extProc\.timeout/,
    ],
    [
      "an unknown field",
      [filter("f", { ...HEADERS, selector: {} })],
      "unsupported_field",
      /spec\.selector is not a known field/,
    ],
    [
      "an empty Lua source",
      [filter("f", { lua: { source: "" } })],
      "invalid_value",
      /spec\.lua\.source must not be empty/,
    ],
    [
      "a bad header name",
      [filter("f", { headerMutation: { response: { remove: ["bad header"] } } })],
      "invalid_value",
      /spec\.headerMutation\.response\.remove\[0\]/,
    ],
    [
      "two different objects with one identity",
      [filter("f", HEADERS), filter("f", { lua: { source: "x" } })],
      "duplicate_object",
      /several different HTTPFilter objects named shop\/f/,
    ],
  ];
  it.each(cases)("%s", (_name, objects, reason, message) => {
    const output = project(objects);
    expect(output.rejections).toHaveLength(1);
    const [rejection] = output.rejections;
    expect(rejection?.route).toEqual({ kind: "HTTPFilter", namespace: NS, name: "f" });
    expect(rejection?.reason).toBe(reason);
    expect(ROUTE_REJECTION_REASONS).toContain(reason);
    expect(rejection?.message).toMatch(message);
    expect(rejection?.services).toEqual(["shop/web"]);
    const web = output.projections.find((p) => p.service === "shop/web");
    expect(web?.httpFilters).toEqual([]);
  });

  it("a backendRef to another namespace needs a ReferenceGrant from HTTPFilter under Gateway rules", () => {
    const ext = filter("f", {
      extAuthz: { backendRef: { name: "authz", namespace: "security", port: 9000 } },
    });
    const refused = project([ext], { requireReferenceGrants: true });
    expect(refused.rejections.map((r) => r.reason)).toEqual(["ref_not_permitted"]);
    const grant: KubeObject = {
      apiVersion: "gateway.networking.k8s.io/v1beta1",
      kind: "ReferenceGrant",
      metadata: { namespace: "security", name: "filters" },
      spec: {
        from: [{ group: "mesh.aether.dev", kind: "HTTPFilter", namespace: NS }],
        to: [{ group: "", kind: "Service" }],
      },
    };
    const granted = project([ext, grant], { requireReferenceGrants: true });
    expect(granted.rejections).toEqual([]);
    expect(granted.projections.find((p) => p.service === "shop/web")?.httpFilters).toHaveLength(1);
  });

  it("an HTTPFilter without a name is rejected", () => {
    const output = project([{ ...filter("f", HEADERS), metadata: { namespace: NS } }]);
    expect(output.rejections.map((r) => [r.route.kind, r.reason, r.services])).toEqual([
      ["HTTPFilter", "invalid_object", []],
    ]);
  });
});

describe("projector: HTTPFilters run in one deterministic order (GEP-713)", () => {
  const at = (t: string) => ({ creationTimestamp: t });
  const objects = [
    filter("z-default", HEADERS),
    filter("stats", { ...HEADERS, phase: "Stats" }),
    filter("authz-low", { ...HEADERS, phase: "AuthZ", priority: 1 }),
    filter("authz-high", { ...HEADERS, phase: "AuthZ", priority: 10 }),
    filter("authn", { ...HEADERS, phase: "AuthN", priority: -100 }),
    filter("b-newer", HEADERS, at("2026-11-02T00:00:00Z")),
    filter("c-older", HEADERS, at("2026-11-01T00:00:00Z")),
    filter("a-same-time", HEADERS, at("2026-11-02T00:00:00Z")),
    filter("y-no-time", HEADERS),
  ];
  const order = [
    "authn",
    "authz-high",
    "authz-low",
    "stats",
    "c-older",
    "a-same-time",
    "b-newer",
    "y-no-time",
    "z-default",
  ];

  it("by phase, then higher priority, then older creation time (none last), then name", () => {
    const names = (filtersJson(objects) as { name: string }[]).map((f) => f.name);
    expect(names).toEqual(order);
  });

  it("whatever order the objects come in: byte-identical projections", () => {
    const want = project(objects).projections.map((p) =>
      toBinary(ServiceConfigProjectionSchema, p),
    );
    const next = mulberry32(7);
    for (let round = 0; round < 20; round++) {
      const shuffled = [...WORLD, ...objects]
        .map((o) => ({ o, k: next() }))
        .sort((a, b) => a.k - b.k)
        .map(({ o }) => o);
      const got = projectServices(shuffled).projections.map((p) =>
        toBinary(ServiceConfigProjectionSchema, p),
      );
      expect(got).toEqual(want);
    }
  });
});

describe("projector: HTTPFilters that are not exported", () => {
  const extensionRoute = extensionRefRoute(NS, "web-route", "web", {
    group: "mesh.aether.dev",
    kind: "HTTPFilter",
    name: "caller-side",
  });
  const callerSide: KubeObject = {
    ...filter("caller-side", { lua: { source: "-- caller side only" } }),
    spec: { lua: { source: "-- caller side only" } },
  };

  it("a filter only named by a route's ExtensionRef stays local: the reference travels, the filter never does", () => {
    const output = project([extensionRoute, callerSide]);
    expect(output.rejections).toEqual([]);
    const web = output.projections.find((p) => p.service === "shop/web");
    expect(web?.httpFilters).toEqual([]);
    const rule = toJson(ServiceConfigProjectionSchema, web as never) as {
      routes: { rules: { filters: JsonValue[] }[] }[];
    };
    expect(rule.routes[0]?.rules[0]?.filters).toEqual([
      { extensionRef: { group: "mesh.aether.dev", kind: "HTTPFilter", name: "caller-side" } },
    ]);
    const bytes = Buffer.from(toBinary(ServiceConfigProjectionSchema, web as never));
    expect(bytes.includes("caller side only")).toBe(false);
  });

  it("a filter on a Service that is not exported is neither projected nor reported (even when invalid)", () => {
    const output = project([
      filter("f", {
        lua: { source: "" },
        targetRefs: [{ group: "", kind: "Service", name: "api" }],
      }),
    ]);
    expect(output.rejections).toEqual([]);
    expect(output.projections.map((p) => [p.service, p.httpFilters.length])).toEqual([
      ["shop/web", 0],
    ]);
  });

  it("a filter never brings a Service into scope, even with exportAll", () => {
    const output = project(
      [filter("f", { ...HEADERS, targetRefs: [{ group: "", kind: "Service", name: "api" }] })],
      { exportAll: true },
    );
    expect(output.projections.map((p) => p.service)).toEqual(["shop/web"]);
  });
});

describe("projector: incremental HTTPFilter edits", () => {
  it("give byte for byte what a full projection gives", () => {
    const steps: KubeObject[][] = [
      [filter("a", HEADERS)],
      [filter("a", { ...HEADERS, phase: "AuthN" }), filter("b", { lua: { source: "x" } })],
      [
        filter("a", { ...HEADERS, phase: "AuthN" }),
        filter("b", { extProc: { backendRef: { name: "api", port: 80 } } }),
      ],
      [filter("b", { extProc: { backendRef: { name: "api", port: 80 } } })],
      [],
    ];
    const projector = createIncrementalProjector();
    const held = new Map<string, Uint8Array>();
    // Enough unrelated objects that each step is a small change, applied incrementally.
    const filler = Array.from({ length: 40 }, (_, i) => service(`s${i}`, "filler"));
    let world = [...WORLD, ...filler];
    for (const [i, filters] of steps.entries()) {
      // At step 3 the extension's Service goes away: the filter is rejected.
      if (i === 3) world = world.filter((o) => o.metadata?.name !== "api");
      const objects = [...world, ...filters];
      const update = projector.update(objects);
      for (const p of update.projections)
        held.set(p.service, toBinary(ServiceConfigProjectionSchema, p));
      const full = projectServices(objects);
      expect(held, `step ${i}`).toEqual(
        new Map(
          full.projections.map((p) => [p.service, toBinary(ServiceConfigProjectionSchema, p)]),
        ),
      );
      expect(update.rejections, `step ${i}`).toEqual(full.rejections);
      if (i === 3) expect(full.rejections.map((r) => r.reason)).toEqual(["backend_not_found"]);
      if (i > 0) expect(update.full, `step ${i}`).toBe(false);
    }
  });
});
