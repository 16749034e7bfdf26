/**
 * HTTPRoute `rules[].retry` (Gateway API v1.7 Standard) on the projection,
 * table-driven: valid policies and their one canonical form, every invalid
 * value with its reason, GRPCRoute (no retry upstream) and route-inline
 * `sessionPersistence` (deprecated upstream) still rejected, and
 * determinism: equal policies give equal bytes, and the incremental
 * projector gives byte for byte what a full projection gives.
 */
import { type JsonValue, toBinary, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  RouteRuleSchema,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { projectRoute, projectServices } from "../../services/common/projector.js";
import { createIncrementalProjector } from "../../services/common/projector-incremental.js";

const NS = "shop";
const GW = "gateway.networking.k8s.io/v1";

function service(name: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: NS, name },
    spec: { ports: [{ name: "http", port: 80 }] },
  };
}

function serviceExport(name: string): KubeObject {
  return {
    apiVersion: "multicluster.x-k8s.io/v1alpha1",
    kind: "ServiceExport",
    metadata: { namespace: NS, name },
  };
}

function route(kind: "HTTPRoute" | "GRPCRoute", name: string, rule: object): KubeObject {
  return {
    apiVersion: GW,
    kind,
    metadata: { namespace: NS, name },
    spec: {
      parentRefs: [{ group: "", kind: "Service", name: "web" }],
      rules: [{ backendRefs: [{ name: "web", port: 80 }], ...rule }],
    },
  };
}

const WORLD: KubeObject[] = [service("web"), serviceExport("web"), service("api")];

/** The projected rule's retry, as proto JSON; undefined when the rule has none. */
function retryJson(rule: object): JsonValue | undefined {
  const result = projectRoute(route("HTTPRoute", "r", rule), WORLD);
  if ("rejection" in result) {
    throw new Error(`unexpected rejection: ${result.rejection.message}`);
  }
  const json = toJson(RouteRuleSchema, result.route.rules[0] as never) as { retry?: JsonValue };
  return json.retry;
}

describe("projector: HTTPRoute retry is carried", () => {
  const cases: [string, object, JsonValue | undefined][] = [
    ["no retry: none", {}, undefined],
    [
      "codes, attempts and backoff",
      { retry: { codes: [500, 502, 503], attempts: 3, backoff: "100ms" } },
      { codes: [500, 502, 503], attempts: 3, backoff: "0.100s" },
    ],
    ["an empty stanza is kept: connection errors are retried", { retry: {} }, {}],
    [
      "codes are a set: sorted, whatever order the route lists them in",
      { retry: { codes: [504, 429, 500, 599, 400] } },
      { codes: [400, 429, 500, 504, 599] },
    ],
    ["attempts 0 turns retries off (and is kept)", { retry: { attempts: 0 } }, { attempts: 0 }],
    [
      "a backoff of several components",
      { retry: { backoff: "1m30s500ms" } },
      { backoff: "90.500s" },
    ],
    ["a zero backoff", { retry: { backoff: "0s" } }, { backoff: "0s" }],
    [
      "explicit nulls read as absent, as the API server reads them",
      { retry: { codes: null, attempts: null, backoff: null } },
      {},
    ],
    ["an empty code list", { retry: { codes: [] } }, {}],
    [
      "with timeouts, both are carried",
      { timeouts: { request: "10s" }, retry: { attempts: 2 } },
      { attempts: 2 },
    ],
  ];
  for (const [name, rule, want] of cases) {
    it(name, () => {
      expect(retryJson(rule)).toEqual(want);
    });
  }
});

describe("projector: invalid retry values are rejected with a reason", () => {
  const cases: [string, KubeObject, string, RegExp][] = [
    [
      "a code below 400",
      route("HTTPRoute", "r", { retry: { codes: [500, 399] } }),
      "invalid_value",
      /^spec\.rules\[0\]\.retry\.codes\[1\] is 399; it must be an HTTP status code between 400 and 599$/,
    ],
    [
      "a code above 599",
      route("HTTPRoute", "r", { retry: { codes: [600] } }),
      "invalid_value",
      /^spec\.rules\[0\]\.retry\.codes\[0\] is 600; it must be an HTTP status code between 400 and 599$/,
    ],
    [
      "a repeated code",
      route("HTTPRoute", "r", { retry: { codes: [503, 500, 503] } }),
      "invalid_value",
      /^spec\.rules\[0\]\.retry\.codes\[2\] repeats the status code 503$/,
    ],
    [
      "a code as a string",
      route("HTTPRoute", "r", { retry: { codes: ["503"] } }),
      "invalid_object",
      /^spec\.rules\[0\]\.retry\.codes\[0\] must be an integer, not a string$/,
    ],
    [
      "a fractional code",
      route("HTTPRoute", "r", { retry: { codes: [500.5] } }),
      "invalid_object",
      /^spec\.rules\[0\]\.retry\.codes\[0\] must be an integer, not the number 500\.5$/,
    ],
    [
      "codes that are not a list",
      route("HTTPRoute", "r", { retry: { codes: 503 } }),
      "invalid_object",
      /^spec\.rules\[0\]\.retry\.codes must be a list, not a number$/,
    ],
    [
      "more codes than there are status codes",
      route("HTTPRoute", "r", { retry: { codes: Array.from({ length: 201 }, () => 500) } }),
      "invalid_value",
      /^spec\.rules\[0\]\.retry\.codes has 201 entries; at most 200 are allowed$/,
    ],
    [
      "negative attempts",
      route("HTTPRoute", "r", { retry: { attempts: -1 } }),
      "invalid_value",
      /^spec\.rules\[0\]\.retry\.attempts is -1; it must be between 0 and 2147483647$/,
    ],
    [
      "attempts beyond the contract's range",
      route("HTTPRoute", "r", { retry: { attempts: 2 ** 31 } }),
      "invalid_value",
      /^spec\.rules\[0\]\.retry\.attempts is 2147483648; it must be between 0 and 2147483647$/,
    ],
    [
      "attempts as a string",
      route("HTTPRoute", "r", { retry: { attempts: "3" } }),
      "invalid_object",
      /^spec\.rules\[0\]\.retry\.attempts must be an integer, not a string$/,
    ],
    [
      "a fractional backoff",
      route("HTTPRoute", "r", { retry: { backoff: "1.5s" } }),
      "invalid_duration",
      /^spec\.rules\[0\]\.retry\.backoff "1\.5s" is not a Gateway API duration/,
    ],
    [
      "a negative backoff",
      route("HTTPRoute", "r", { retry: { backoff: "-1s" } }),
      "invalid_duration",
      /^spec\.rules\[0\]\.retry\.backoff "-1s" is not a Gateway API duration/,
    ],
    [
      "a backoff in days",
      route("HTTPRoute", "r", { retry: { backoff: "1d" } }),
      "invalid_duration",
      /^spec\.rules\[0\]\.retry\.backoff "1d" is not a Gateway API duration/,
    ],
    [
      "a backoff as a number",
      route("HTTPRoute", "r", { retry: { backoff: 100 } }),
      "invalid_object",
      /^spec\.rules\[0\]\.retry\.backoff must be a string, not the number 100$/,
    ],
    [
      "a retry that is not an object",
      route("HTTPRoute", "r", { retry: [500] }),
      "invalid_object",
      /^spec\.rules\[0\]\.retry must be an object, not an array$/,
    ],
    [
      "a retry field the Gateway API does not define",
      route("HTTPRoute", "r", { retry: { attempts: 2, perTryTimeout: "1s" } }),
      "unsupported_field",
      /^spec\.rules\[0\]\.retry\.perTryTimeout is not a known field$/,
    ],
    [
      "GRPCRoute: upstream defines no retry, so it stays an unknown field",
      route("GRPCRoute", "g", { retry: { attempts: 2 } }),
      "unsupported_field",
      /^spec\.rules\[0\]\.retry is not a known field$/,
    ],
    [
      "HTTPRoute sessionPersistence: deprecated on route rules in v1.7",
      route("HTTPRoute", "r", { sessionPersistence: { type: "Cookie" } }),
      "unsupported_field",
      /^spec\.rules\[0\]\.sessionPersistence is not supported by the projection: Gateway API v1\.7 deprecates session persistence on route rules; configure it on the backend \(XBackend, GEP-4894\) instead$/,
    ],
    [
      "GRPCRoute sessionPersistence: the same",
      route("GRPCRoute", "g", { sessionPersistence: { type: "Header" } }),
      "unsupported_field",
      /^spec\.rules\[0\]\.sessionPersistence is not supported by the projection: Gateway API v1\.7 deprecates/,
    ],
  ];
  for (const [name, object, reason, message] of cases) {
    it(name, () => {
      const result = projectRoute(object, WORLD);
      if (!("rejection" in result)) throw new Error("expected a rejection");
      expect(result.rejection.reason).toBe(reason);
      expect(result.rejection.message).toMatch(message);
    });
  }

  it("a rejected retry rejects its route in the service's projection, not the service", () => {
    const bad = route("HTTPRoute", "bad", { retry: { codes: [700] } });
    const good = route("HTTPRoute", "good", { retry: { codes: [503] } });
    const out = projectServices([...WORLD, bad, good]);
    expect(out.projections.map((p) => p.routes.map((r) => r.name))).toEqual([["good"]]);
    expect(out.rejections.map((r) => [r.route.name, r.reason, r.services])).toEqual([
      ["bad", "invalid_value", ["shop/web"]],
    ]);
  });
});

describe("projector: retry output is deterministic", () => {
  const bytes = (objects: KubeObject[]) =>
    projectServices(objects).projections.map((p) => toBinary(ServiceConfigProjectionSchema, p));

  it("equal policies written differently project to the same bytes", () => {
    const a = route("HTTPRoute", "r", {
      retry: { codes: [503, 500], attempts: 2, backoff: "1000ms" },
    });
    const b = route("HTTPRoute", "r", {
      retry: { backoff: "1s", attempts: 2, codes: [500, 503] },
    });
    expect(bytes([...WORLD, a])).toEqual(bytes([...WORLD, b]));
    expect(bytes([...WORLD, a])).toEqual(bytes([b, ...WORLD].reverse()));
  });

  it("a policy changes the bytes: an empty stanza is not the same as none", () => {
    const none = bytes([...WORLD, route("HTTPRoute", "r", {})]);
    const empty = bytes([...WORLD, route("HTTPRoute", "r", { retry: {} })]);
    const off = bytes([...WORLD, route("HTTPRoute", "r", { retry: { attempts: 0 } })]);
    expect(empty).not.toEqual(none);
    expect(off).not.toEqual(empty);
  });

  it("incremental projection equals a full one, byte for byte, through retry edits", () => {
    const policies: (object | undefined)[] = [
      { codes: [503], attempts: 2, backoff: "100ms" },
      { codes: [500, 503], attempts: 2, backoff: "100ms" },
      {},
      { attempts: 0 },
      { codes: [700] },
      undefined,
      { codes: [502], backoff: "1s" },
    ];
    const routeWith = (name: string, retry: object | undefined) =>
      route("HTTPRoute", name, retry === undefined ? {} : { retry });
    // Enough other objects that editing one route is a small change, projected incrementally.
    const others = ["s1", "s2", "s3", "s4"].flatMap((name) => [service(name), serviceExport(name)]);
    let objects: KubeObject[] = [
      ...WORLD,
      ...others,
      routeWith("a", undefined),
      routeWith("b", {}),
    ];
    const projector = createIncrementalProjector();
    const held = new Map<string, Uint8Array>();
    let incremental = 0;
    policies.forEach((policy, step) => {
      // Edit one route in place (a new object), as a source does.
      const name = step % 2 === 0 ? "a" : "b";
      objects = objects.map((o) => (o.metadata?.name === name ? routeWith(name, policy) : o));
      const update = projector.update(objects);
      if (update.full) held.clear();
      else incremental++;
      for (const p of update.projections) {
        held.set(p.service, toBinary(ServiceConfigProjectionSchema, p));
      }
      const full = projectServices(objects);
      const want = new Map(
        full.projections.map((p) => [p.service, toBinary(ServiceConfigProjectionSchema, p)]),
      );
      expect(held, `step ${step}`).toEqual(want);
      expect(update.rejections, `step ${step}`).toEqual(full.rejections);
    });
    expect(incremental).toBeGreaterThan(0);
  });
});
