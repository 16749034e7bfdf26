/**
 * The statuses of decisions for gRPC calls, table-driven against the specs:
 * gRPC's HTTP-to-gRPC status mapping, the Gateway API's Unimplemented for a
 * call no route matches, and the GRPCRoute spec's UNAVAILABLE for a rule
 * with no usable backend (none, every one weight 0, or invalid), where an
 * HTTPRoute gives 500.
 */
import { describe, expect, it } from "vitest";
import { RouteKind, StringMatchType } from "../../gen/aether/registry/v1/projection_pb.js";
import {
  type EvaluateInput,
  type EvaluatorRequest,
  evaluate,
  grpcStatusForHttp,
} from "../../services/common/evaluator.js";
import { type RuleInit, ruleProjection } from "../support/projections.js";

const SVC = "shop/cart";
const MESH = { service: SVC, port: 7070, callerNamespace: "web" };
const echo = [{ grpcMethod: { type: StringMatchType.EXACT, service: "pkg.Echo" } }];
const backend = (service: string, weight = 1) => ({ service, port: 7070, weight });
const setHeader = {
  filter: {
    case: "requestHeaderModifier" as const,
    value: { set: [{ name: "x-a", value: "1" }] },
  },
};

const projection = (kind: RouteKind, rules: RuleInit[]) =>
  ruleProjection(SVC, rules, { kind, port: 7070 });

const call = (method = "Say"): EvaluatorRequest => ({
  kind: "grpc",
  authority: "cart:7070",
  service: "pkg.Echo",
  method,
});

describe("grpcStatusForHttp: gRPC's HTTP to gRPC status code mapping", () => {
  it.each([
    [200, "OK"],
    [400, "Internal"],
    [401, "Unauthenticated"],
    [403, "PermissionDenied"],
    [404, "Unimplemented"],
    [429, "Unavailable"],
    [502, "Unavailable"],
    [503, "Unavailable"],
    [504, "Unavailable"],
    [500, "Unknown"],
    [501, "Unknown"],
    [302, "Unknown"],
    [418, "Unknown"],
  ])("HTTP %s is gRPC %s", (status, name) => {
    expect(grpcStatusForHttp(status)).toBe(name);
  });
});

describe("evaluate: the status of a gRPC call", () => {
  const G = RouteKind.GRPC;
  const H = RouteKind.HTTP;
  const cases: [
    name: string,
    kind: RouteKind,
    rules: RuleInit[],
    extra: Partial<EvaluateInput>,
    want: [outcome: string, status: number, grpcStatus: string],
  ][] = [
    [
      "GRPCRoute, forwarded: OK (the backend's own status)",
      G,
      [{ matches: echo, backends: [backend("shop/echo")] }],
      {},
      ["forwarded", 200, "OK"],
    ],
    [
      "GRPCRoute, no method matches: Unimplemented",
      G,
      [{ matches: [{ grpcMethod: { type: StringMatchType.EXACT, method: "Other" } }] }],
      {},
      ["no-route", 404, "Unimplemented"],
    ],
    [
      "GRPCRoute, a rule without backendRefs: UNAVAILABLE",
      G,
      [{ matches: echo }],
      {},
      ["no-backend", 503, "Unavailable"],
    ],
    [
      "GRPCRoute, every backend weight 0: UNAVAILABLE",
      G,
      [{ backends: [backend("shop/echo", 0), backend("shop/echo-v2", 0)] }],
      {},
      ["no-backend", 503, "Unavailable"],
    ],
    [
      "GRPCRoute, every backendRef missing or invalid (unresolved): UNAVAILABLE",
      G,
      [{ backends: [backend(""), backend("")] }],
      {},
      ["no-backend", 503, "Unavailable"],
    ],
    [
      "GRPCRoute, invalid backends and filters: UNAVAILABLE all the same",
      G,
      [{ filters: [setHeader], backends: [backend("")] }],
      {},
      ["no-backend", 503, "Unavailable"],
    ],
    [
      "GRPCRoute, a backend the caller may not reach: UNAVAILABLE",
      G,
      [{ backends: [backend("other/echo")] }],
      { isBackendResolvable: (b) => !b.service.startsWith("other/") },
      ["no-backend", 503, "Unavailable"],
    ],
    [
      "GRPCRoute, half the weight invalid, drawn: UNAVAILABLE for that share",
      G,
      [{ backends: [backend(""), backend("shop/echo")] }],
      { random: () => 0.25 },
      ["no-backend", 503, "Unavailable"],
    ],
    [
      "GRPCRoute, half the weight invalid, the valid half drawn: OK",
      G,
      [{ backends: [backend(""), backend("shop/echo")] }],
      { random: () => 0.75 },
      ["forwarded", 200, "OK"],
    ],
    [
      "an HTTPRoute a gRPC call matches, without backends: its spec's 500, which gRPC reads as Unknown",
      H,
      [{ backends: [] }],
      {},
      ["no-backend", 500, "Unknown"],
    ],
    [
      "an HTTPRoute a gRPC call matches, redirecting: a 3xx, which gRPC reads as Unknown",
      H,
      [{ filters: [{ filter: { case: "requestRedirect", value: { statusCode: 302 } } }] }],
      {},
      ["redirected", 302, "Unknown"],
    ],
    [
      "no route attaches to the port: passthrough, OK",
      G,
      [{ matches: echo, backends: [backend("shop/echo")] }],
      { mesh: { ...MESH, port: 9999 } },
      ["passthrough", 200, "OK"],
    ],
  ];
  it.each(cases)("%s", (_name, kind, rules, extra, [outcome, status, grpcStatus]) => {
    const decision = evaluate({
      projections: [projection(kind, rules)],
      request: call(),
      mesh: MESH,
      ...extra,
    });
    expect([decision.outcome, decision.status, decision.grpcStatus]).toEqual([
      outcome,
      status,
      grpcStatus,
    ]);
  });

  it("an HTTP request to an HTTPRoute without backends gets a 500 and no gRPC status", () => {
    const decision = evaluate({
      projections: [projection(RouteKind.HTTP, [{ backends: [] }])],
      request: { kind: "http", method: "GET", host: "cart", path: "/" },
      mesh: MESH,
    });
    expect([decision.outcome, decision.status, decision.grpcStatus]).toEqual([
      "no-backend",
      500,
      undefined,
    ]);
  });
});
