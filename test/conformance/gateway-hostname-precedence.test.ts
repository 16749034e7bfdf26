/**
 * Route hostname precedence at one Gateway listener, beyond the corpus:
 * between routes attached to the same listener whose hostnames intersect,
 * the hostnames the routes themselves specify decide (characters of a
 * matching non-wildcard hostname, then characters of a matching hostname; a
 * route without hostnames ranks last, as `*`), and only then the match
 * precedence and the routes' age. The listener/route intersection decides
 * attachment and which of a route's hostnames count, never the rank
 * (HTTPRoute and GRPCRoute `hostnames`; upstream names the behaviour
 * `GatewayRouteHostnameIntersectionPrecedence`).
 *
 * Each table row is a Gateway with one HTTP listener on port 80 and routes
 * listed oldest first, so a route that wins only by age would win the wrong
 * way. The rows run through the same harness, evaluator and checks as the
 * corpus (gateway-harness.ts, expectations.ts), on the corpus's gateway
 * infrastructure (its Services and Deployments).
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../services/common/kube-object.js";
import {
  type CorpusCase,
  type CorpusFile,
  type Expectation,
  type GatewayRequest,
  objectsOf,
} from "./corpus.js";
import { checkCase } from "./expectations.js";
import { gatewayRunner, routeHostnamesOnListener } from "./gateway-harness.js";

const NAMESPACE = "gateway-conformance-infra";
const GATEWAY = "hostname-precedence";
const GRPC_SERVICE = "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho";

/** A route of a row: its hostnames, one rule with an optional path match, one backend. */
interface RouteRow {
  readonly kind?: "HTTPRoute" | "GRPCRoute";
  readonly hostnames?: readonly string[];
  readonly path?: { readonly type: "Exact" | "PathPrefix"; readonly value: string };
  readonly backend: string;
}

/** A request of a row and the backend it must reach (null: none, with a 404). */
interface RequestRow {
  readonly host: string;
  readonly path?: string;
  readonly backend: string | null;
}

/** One Gateway (one listener) with routes, oldest first, and requests against it. */
interface Row {
  readonly name: string;
  readonly listener: string | undefined;
  readonly routes: readonly RouteRow[];
  readonly requests: readonly RequestRow[];
}

const ROWS: readonly Row[] = [
  {
    name: "wildcard listener: an exact route beats an older wildcard route",
    listener: "*.example.com",
    routes: [
      { hostnames: ["*.example.com"], backend: "infra-backend-v1" },
      { hostnames: ["foo.example.com"], backend: "infra-backend-v2" },
    ],
    requests: [
      { host: "foo.example.com", backend: "infra-backend-v2" },
      { host: "bar.example.com", backend: "infra-backend-v1" },
      { host: "example.com", backend: null },
    ],
  },
  {
    name: "wildcard listener: an exact route beats a newer wildcard route",
    listener: "*.example.com",
    routes: [
      { hostnames: ["foo.example.com"], backend: "infra-backend-v1" },
      { hostnames: ["*.example.com"], backend: "infra-backend-v2" },
    ],
    requests: [
      { host: "foo.example.com", backend: "infra-backend-v1" },
      { host: "bar.example.com", backend: "infra-backend-v2" },
    ],
  },
  {
    name: "exact listener: the route's own exact hostname beats an older wildcard route",
    listener: "foo.example.com",
    routes: [
      { hostnames: ["*.example.com"], backend: "infra-backend-v1" },
      { hostnames: ["foo.example.com"], backend: "infra-backend-v2" },
    ],
    requests: [
      { host: "foo.example.com", backend: "infra-backend-v2" },
      { host: "bar.example.com", backend: null },
    ],
  },
  {
    name: "exact listener: a route with hostnames beats an older route without",
    listener: "foo.example.com",
    routes: [
      { backend: "infra-backend-v1" },
      { hostnames: ["*.example.com"], backend: "infra-backend-v2" },
    ],
    requests: [{ host: "foo.example.com", backend: "infra-backend-v2" }],
  },
  {
    name: "wildcard listener: a longer wildcard suffix beats an older shorter one",
    listener: "*.example.com",
    routes: [
      { hostnames: ["*.com"], backend: "infra-backend-v1" },
      { hostnames: ["*.example.com"], backend: "infra-backend-v2" },
    ],
    requests: [{ host: "abc.example.com", backend: "infra-backend-v2" }],
  },
  {
    name: "wildcard listener: a route's own wildcard beats an older route without hostnames",
    listener: "*.example.com",
    routes: [
      { backend: "infra-backend-v1" },
      { hostnames: ["*.example.com"], backend: "infra-backend-v2" },
    ],
    requests: [{ host: "abc.example.com", backend: "infra-backend-v2" }],
  },
  {
    name: "wildcard listener: a route narrower than the listener wins inside its suffix only",
    listener: "*.example.com",
    routes: [
      { hostnames: ["*.example.com"], backend: "infra-backend-v1" },
      { hostnames: ["*.foo.example.com"], backend: "infra-backend-v2" },
      { hostnames: ["a.foo.example.com"], backend: "infra-backend-v3" },
    ],
    requests: [
      { host: "b.foo.example.com", backend: "infra-backend-v2" },
      { host: "a.foo.example.com", backend: "infra-backend-v3" },
      { host: "foo.example.com", backend: "infra-backend-v1" },
      { host: "a.bar.example.com", backend: "infra-backend-v1" },
    ],
  },
  {
    name: "listener without hostname: the routes' own hostnames rank as written",
    listener: undefined,
    routes: [
      { backend: "infra-backend-v1" },
      { hostnames: ["*.example.com"], backend: "infra-backend-v2" },
      { hostnames: ["foo.example.com"], backend: "infra-backend-v3" },
    ],
    requests: [
      { host: "foo.example.com", backend: "infra-backend-v3" },
      { host: "bar.example.com", backend: "infra-backend-v2" },
      { host: "example.org", backend: "infra-backend-v1" },
    ],
  },
  {
    name: "exact listener: hostname precedence comes before path precedence",
    listener: "foo.example.com",
    routes: [
      {
        hostnames: ["*.example.com"],
        path: { type: "Exact", value: "/api" },
        backend: "infra-backend-v1",
      },
      { hostnames: ["foo.example.com"], backend: "infra-backend-v2" },
    ],
    requests: [{ host: "foo.example.com", path: "/api", backend: "infra-backend-v2" }],
  },
  {
    name: "equal own hostnames: the match precedence, then the older route",
    listener: "*.example.com",
    routes: [
      { hostnames: ["foo.example.com"], backend: "infra-backend-v1" },
      {
        hostnames: ["foo.example.com"],
        path: { type: "PathPrefix", value: "/api" },
        backend: "infra-backend-v2",
      },
      { hostnames: ["foo.example.com", "*.other.org"], backend: "infra-backend-v3" },
    ],
    requests: [
      { host: "foo.example.com", path: "/api/x", backend: "infra-backend-v2" },
      { host: "foo.example.com", path: "/", backend: "infra-backend-v1" },
    ],
  },
  {
    name: "GRPCRoute, exact listener: the route's own exact hostname beats an older wildcard",
    listener: "abc.example.com",
    routes: [
      { kind: "GRPCRoute", hostnames: ["*.example.com"], backend: "grpc-infra-backend-v1" },
      { kind: "GRPCRoute", hostnames: ["abc.example.com"], backend: "grpc-infra-backend-v2" },
    ],
    requests: [{ host: "abc.example.com", backend: "grpc-infra-backend-v2" }],
  },
  {
    name: "GRPCRoute, wildcard listener: a longer wildcard suffix beats an older shorter one",
    listener: "*.example.com",
    routes: [
      { kind: "GRPCRoute", hostnames: ["*.com"], backend: "grpc-infra-backend-v1" },
      { kind: "GRPCRoute", hostnames: ["*.example.com"], backend: "grpc-infra-backend-v2" },
    ],
    requests: [{ host: "abc.example.com", backend: "grpc-infra-backend-v2" }],
  },
];

function gatewayObject(row: Row, index: number): KubeObject {
  const listener = {
    name: "http",
    port: 80,
    protocol: "HTTP",
    ...(row.listener === undefined ? {} : { hostname: row.listener }),
    allowedRoutes: { namespaces: { from: "Same" } },
  };
  return {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "Gateway",
    metadata: { name: `${GATEWAY}-${index}`, namespace: NAMESPACE },
    spec: { gatewayClassName: "{GATEWAY_CLASS_NAME}", listeners: [listener] },
  };
}

function routeObject(route: RouteRow, gateway: string, index: number): KubeObject {
  const rule: Record<string, unknown> = { backendRefs: [{ name: route.backend, port: 8080 }] };
  if (route.path !== undefined) rule.matches = [{ path: route.path }];
  return {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: route.kind ?? "HTTPRoute",
    metadata: { name: `route-${index}`, namespace: NAMESPACE },
    spec: {
      parentRefs: [{ name: gateway }],
      ...(route.hostnames === undefined ? {} : { hostnames: route.hostnames }),
      rules: [rule],
    },
  };
}

function caseOf(row: Row, index: number, request: RequestRow, requestIndex: number): CorpusCase {
  const gateway = { namespace: NAMESPACE, name: `${GATEWAY}-${index}` };
  const grpc = row.routes.some((r) => r.kind === "GRPCRoute");
  const expect: Expectation =
    request.backend === null
      ? grpc
        ? { grpcStatus: "Unimplemented", backend: null }
        : { status: 404, backend: null }
      : grpc
        ? { grpcStatus: "OK", backend: request.backend, namespace: NAMESPACE }
        : { status: 200, backend: request.backend, namespace: NAMESPACE };
  const target = request.path ?? "/";
  return {
    id: `${GATEWAY}-${index}#${requestIndex}`,
    name: `${row.name}: ${request.host}${grpc ? "" : target} → ${request.backend ?? "none"}`,
    request: grpc
      ? {
          gateway,
          port: 80,
          scheme: "http",
          protocol: "grpc",
          authority: request.host,
          grpc: { service: GRPC_SERVICE, method: "Echo" },
        }
      : { gateway, port: 80, scheme: "http", host: request.host, path: target },
    expect,
  };
}

function fileOf(row: Row, index: number): CorpusFile {
  const gateway = gatewayObject(row, index);
  return {
    name: `${GATEWAY}-${index}`,
    profile: "gateway",
    infrastructure: "base/gateway-infra.json",
    manifests: [gateway, ...row.routes.map((r, i) => routeObject(r, `${GATEWAY}-${index}`, i))],
    cases: row.requests.map((request, i) => caseOf(row, index, request, i)),
  };
}

const CASES = ROWS.flatMap((row, index) => {
  const file = fileOf(row, index);
  return file.cases.map(
    (testCase) => [`${testCase.id} ${testCase.name}`, { file, testCase }] as const,
  );
});

describe("gateway profile: route hostname precedence on one listener", () => {
  it.each(CASES)("%s", (_, { file, testCase }) => {
    const runner = gatewayRunner(objectsOf({ file, testCase }), testCase.request as GatewayRequest);
    expect(checkCase(file, testCase, runner)).toEqual([]);
  });
});

describe("routeHostnamesOnListener: the route's own hostnames a listener keeps", () => {
  it.each<{
    listener: string | undefined;
    route: string[];
    kept: string[] | undefined;
  }>([
    { listener: undefined, route: [], kept: [] },
    {
      listener: undefined,
      route: ["foo.example.com", "*.org"],
      kept: ["foo.example.com", "*.org"],
    },
    { listener: "*.example.com", route: [], kept: [] },
    { listener: "*.example.com", route: ["foo.example.com"], kept: ["foo.example.com"] },
    { listener: "*.example.com", route: ["a.b.example.com"], kept: ["a.b.example.com"] },
    { listener: "*.example.com", route: ["*.example.com"], kept: ["*.example.com"] },
    { listener: "*.example.com", route: ["*.com"], kept: ["*.com"] },
    { listener: "*.example.com", route: ["*.foo.example.com"], kept: ["*.foo.example.com"] },
    { listener: "*.example.com", route: ["example.com", "test.example.net"], kept: undefined },
    {
      listener: "*.example.com",
      route: ["test.example.com", "test.example.net"],
      kept: ["test.example.com"],
    },
    { listener: "foo.example.com", route: ["*.example.com"], kept: ["*.example.com"] },
    { listener: "foo.example.com", route: ["*.com", "bar.example.com"], kept: ["*.com"] },
    { listener: "foo.example.com", route: ["foo.example.com"], kept: ["foo.example.com"] },
    { listener: "foo.example.com", route: ["*.foo.example.com"], kept: undefined },
    { listener: "*.foo.example.com", route: ["*.bar.example.com"], kept: undefined },
  ])("listener $listener, route $route → $kept", ({ listener, route, kept }) => {
    expect(routeHostnamesOnListener(listener, route)).toEqual(kept);
  });
});
