import { type JsonValue, toBinary, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  type Route,
  RouteRole,
  RouteRuleSchema,
  RouteSchema,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import {
  createObjectIndex,
  HTTP_ROUTE,
  type ProjectedRoute,
  type ProjectorOutput,
  projectRoute,
  projectServices,
  ROUTE_REJECTION_REASONS,
  ROUTE_WARNING_REASONS,
  type RouteRejection,
  SERVICE,
} from "../../services/common/projector.js";

// ---------------------------------------------------------------- fixtures

const NS = "shop";
const OTHER = "client";
const GW = "gateway.networking.k8s.io/v1";

type Spec = Record<string, unknown>;

function service(name: string, namespace = NS, spec: Spec = {}): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace, name },
    spec: {
      ports: [
        { name: "http", port: 80, appProtocol: "http" },
        { name: "grpc", port: 7070, appProtocol: "kubernetes.io/h2c" },
        { name: "plain", port: 8080 },
      ],
      ...spec,
    },
  };
}

function serviceExport(name: string, namespace = NS): KubeObject {
  return {
    apiVersion: "multicluster.x-k8s.io/v1alpha1",
    kind: "ServiceExport",
    metadata: { namespace, name },
  };
}

function route(kind: "HTTPRoute" | "GRPCRoute", name: string, spec: unknown, namespace = NS) {
  return { apiVersion: GW, kind, metadata: { namespace, name }, spec } as KubeObject;
}

const http = (name: string, spec: unknown, namespace = NS) =>
  route("HTTPRoute", name, spec, namespace);
const grpc = (name: string, spec: unknown, namespace = NS) =>
  route("GRPCRoute", name, spec, namespace);

function parent(name: string, extra: Spec = {}): Spec {
  return { group: "", kind: "Service", name, ...extra };
}

function grant(namespace: string, fromNamespace: string, fromKind = "HTTPRoute", toName?: string) {
  return {
    apiVersion: "gateway.networking.k8s.io/v1beta1",
    kind: "ReferenceGrant",
    metadata: { namespace, name: `from-${fromNamespace}` },
    spec: {
      from: [{ group: "gateway.networking.k8s.io", kind: fromKind, namespace: fromNamespace }],
      to: [{ group: "", kind: "Service", ...(toName === undefined ? {} : { name: toName }) }],
    },
  } as KubeObject;
}

/** The world most tests project against. */
const WORLD: KubeObject[] = [
  { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
  { apiVersion: "v1", kind: "Namespace", metadata: { name: OTHER } },
  service("web"),
  serviceExport("web"),
  service("web-v2"),
  serviceExport("web-v2"),
  service("api"),
  serviceExport("api"),
  service("internal"),
  service("backend", OTHER),
  service("legacy", NS, { type: "ExternalName", externalName: "legacy.example.com" }),
];

const backend = (name = "web", extra: Spec = {}): Spec => ({ name, port: 80, ...extra });

/** An HTTPRoute with one rule, attached to `web`. */
const httpRule = (rule: Spec, name = "r") =>
  http(name, { parentRefs: [parent("web")], rules: [rule] });

function accepted(result: ProjectedRoute): Route {
  if ("rejection" in result) {
    throw new Error(
      `unexpected rejection: ${result.rejection.reason}: ${result.rejection.message}`,
    );
  }
  return result.route;
}

function rejected(result: ProjectedRoute): RouteRejection {
  if (!("rejection" in result)) throw new Error("expected a rejection");
  return result.rejection;
}

function ruleJson(r: Route, i = 0): JsonValue {
  const rule = r.rules[i];
  if (rule === undefined) throw new Error(`the route has no rule ${i}`);
  return toJson(RouteRuleSchema, rule);
}

const HTTP_WEB = { service: "shop/web", port: 80, weight: 1, appProtocol: "http" };
const PREFIX_ROOT = { path: { type: "PATH_MATCH_TYPE_PATH_PREFIX", value: "/" } };

// ---------------------------------------------------------------- projectRoute: HTTP

describe("projectRoute: HTTPRoute rules", () => {
  const cases: [string, Spec, JsonValue][] = [
    [
      "a rule without matches gets PathPrefix / and a backend weight 1",
      { backendRefs: [backend()] },
      { matches: [PREFIX_ROOT], backends: [HTTP_WEB] },
    ],
    [
      "a match without a path gets PathPrefix /",
      { matches: [{ method: "GET" }], backendRefs: [backend()] },
      { matches: [{ ...PREFIX_ROOT, method: "GET" }], backends: [HTTP_WEB] },
    ],
    [
      "path types, and the defaults of a partial path",
      {
        matches: [
          { path: { type: "Exact", value: "/exact" } },
          { path: { type: "PathPrefix", value: "/prefix" } },
          { path: { type: "RegularExpression", value: "/re/[0-9]+" } },
          { path: { type: "Exact" } },
          { path: { value: "/only-value" } },
        ],
      },
      {
        matches: [
          { path: { type: "PATH_MATCH_TYPE_EXACT", value: "/exact" } },
          { path: { type: "PATH_MATCH_TYPE_PATH_PREFIX", value: "/prefix" } },
          { path: { type: "PATH_MATCH_TYPE_REGULAR_EXPRESSION", value: "/re/[0-9]+" } },
          { path: { type: "PATH_MATCH_TYPE_EXACT", value: "/" } },
          { path: { type: "PATH_MATCH_TYPE_PATH_PREFIX", value: "/only-value" } },
        ],
      },
    ],
    [
      "headers: names lower-cased, regex kept, later equivalent names ignored",
      {
        matches: [
          {
            headers: [
              { name: "X-Version", value: "v2" },
              { type: "RegularExpression", name: "x-re", value: "a.*" },
              { name: "x-version", value: "ignored" },
            ],
          },
        ],
      },
      {
        matches: [
          {
            ...PREFIX_ROOT,
            headers: [
              { type: "STRING_MATCH_TYPE_EXACT", name: "x-version", value: "v2" },
              { type: "STRING_MATCH_TYPE_REGULAR_EXPRESSION", name: "x-re", value: "a.*" },
            ],
          },
        ],
      },
    ],
    [
      "query params: case-sensitive names, first of equal names wins",
      {
        matches: [
          {
            queryParams: [
              { name: "Animal", value: "Whale" },
              { name: "animal", value: "dolphin" },
              { name: "Animal", value: "ignored" },
              { type: "RegularExpression", name: "n", value: "[0-9]+" },
            ],
          },
        ],
      },
      {
        matches: [
          {
            ...PREFIX_ROOT,
            queryParams: [
              { type: "STRING_MATCH_TYPE_EXACT", name: "Animal", value: "Whale" },
              { type: "STRING_MATCH_TYPE_EXACT", name: "animal", value: "dolphin" },
              { type: "STRING_MATCH_TYPE_REGULAR_EXPRESSION", name: "n", value: "[0-9]+" },
            ],
          },
        ],
      },
    ],
    [
      "method and name",
      { name: "write-path", matches: [{ method: "POST", path: { value: "/w" } }] },
      {
        name: "write-path",
        matches: [{ path: { type: "PATH_MATCH_TYPE_PATH_PREFIX", value: "/w" }, method: "POST" }],
      },
    ],
    [
      "request and response header modifiers",
      {
        filters: [
          {
            type: "RequestHeaderModifier",
            requestHeaderModifier: {
              set: [{ name: "X-Set", value: "s" }],
              add: [{ name: "X-Add", value: "a" }],
              remove: ["X-Remove"],
            },
          },
          {
            type: "ResponseHeaderModifier",
            responseHeaderModifier: { add: [{ name: "X-Resp", value: "r" }] },
          },
        ],
        backendRefs: [backend()],
      },
      {
        matches: [PREFIX_ROOT],
        filters: [
          {
            requestHeaderModifier: {
              set: [{ name: "X-Set", value: "s" }],
              add: [{ name: "X-Add", value: "a" }],
              remove: ["X-Remove"],
            },
          },
          { responseHeaderModifier: { add: [{ name: "X-Resp", value: "r" }] } },
        ],
        backends: [HTTP_WEB],
      },
    ],
    [
      "a full redirect",
      {
        filters: [
          {
            type: "RequestRedirect",
            requestRedirect: {
              scheme: "https",
              hostname: "example.org",
              path: { type: "ReplaceFullPath", replaceFullPath: "/new" },
              port: 8443,
              statusCode: 301,
            },
          },
        ],
      },
      {
        matches: [PREFIX_ROOT],
        filters: [
          {
            requestRedirect: {
              scheme: "https",
              hostname: "example.org",
              path: { type: "PATH_MODIFIER_TYPE_REPLACE_FULL_PATH", value: "/new" },
              port: 8443,
              statusCode: 301,
            },
          },
        ],
      },
    ],
    [
      "a redirect defaults to 302, and ReplacePrefixMatch with one PathPrefix match",
      {
        matches: [{ path: { type: "PathPrefix", value: "/old" } }],
        filters: [
          {
            type: "RequestRedirect",
            requestRedirect: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/new" } },
          },
        ],
      },
      {
        matches: [{ path: { type: "PATH_MATCH_TYPE_PATH_PREFIX", value: "/old" } }],
        filters: [
          {
            requestRedirect: {
              path: { type: "PATH_MODIFIER_TYPE_REPLACE_PREFIX_MATCH", value: "/new" },
              statusCode: 302,
            },
          },
        ],
      },
    ],
    [
      "URL rewrite (ReplacePrefixMatch allowed with the default match) and an empty prefix",
      {
        filters: [
          {
            type: "URLRewrite",
            urlRewrite: {
              hostname: "internal.example",
              path: { type: "ReplacePrefixMatch", replacePrefixMatch: "" },
            },
          },
        ],
        backendRefs: [backend()],
      },
      {
        matches: [PREFIX_ROOT],
        filters: [
          {
            urlRewrite: {
              hostname: "internal.example",
              path: { type: "PATH_MODIFIER_TYPE_REPLACE_PREFIX_MATCH" },
            },
          },
        ],
        backends: [HTTP_WEB],
      },
    ],
    [
      "mirrors: percent, fraction (default denominator 100), all",
      {
        filters: [
          { type: "RequestMirror", requestMirror: { backendRef: backend("web-v2"), percent: 20 } },
          {
            type: "RequestMirror",
            requestMirror: {
              backendRef: backend("web-v2", { port: 8080 }),
              fraction: { numerator: 25, denominator: 50 },
            },
          },
          {
            type: "RequestMirror",
            requestMirror: { backendRef: backend("api"), fraction: { numerator: 3 } },
          },
          { type: "RequestMirror", requestMirror: { backendRef: backend("internal") } },
        ],
      },
      {
        matches: [PREFIX_ROOT],
        filters: [
          {
            requestMirror: {
              backend: { service: "shop/web-v2", port: 80, appProtocol: "http" },
              fraction: { numerator: 20, denominator: 100 },
            },
          },
          {
            requestMirror: {
              backend: { service: "shop/web-v2", port: 8080 },
              fraction: { numerator: 25, denominator: 50 },
            },
          },
          {
            requestMirror: {
              backend: { service: "shop/api", port: 80, appProtocol: "http" },
              fraction: { numerator: 3, denominator: 100 },
            },
          },
          {
            requestMirror: { backend: { service: "shop/internal", port: 80, appProtocol: "http" } },
          },
        ],
      },
    ],
    [
      "extension refs and CORS (maxAge defaults to 5)",
      {
        filters: [
          {
            type: "ExtensionRef",
            extensionRef: { group: "example.com", kind: "RateLimit", name: "slow" },
          },
          {
            type: "CORS",
            cors: {
              allowOrigins: ["https://www.foo.com", "https://*.bar.com"],
              allowMethods: ["GET", "OPTIONS"],
              allowHeaders: ["x-header-1"],
              exposeHeaders: ["x-header-3"],
              allowCredentials: true,
            },
          },
        ],
        backendRefs: [backend()],
      },
      {
        matches: [PREFIX_ROOT],
        filters: [
          { extensionRef: { group: "example.com", kind: "RateLimit", name: "slow" } },
          {
            cors: {
              allowOrigins: ["https://www.foo.com", "https://*.bar.com"],
              allowCredentials: true,
              allowMethods: ["GET", "OPTIONS"],
              allowHeaders: ["x-header-1"],
              exposeHeaders: ["x-header-3"],
              maxAgeSeconds: 5,
            },
          },
        ],
        backends: [HTTP_WEB],
      },
    ],
    [
      "backends: weights, appProtocol of the selected port, backend filters",
      {
        backendRefs: [
          backend("web", { weight: 90 }),
          backend("web-v2", { port: 7070, weight: 10 }),
          backend("api", { port: 8080, weight: 0 }),
          backend("web", {
            filters: [
              {
                type: "URLRewrite",
                urlRewrite: { path: { type: "ReplaceFullPath", replaceFullPath: "/x" } },
              },
            ],
          }),
        ],
      },
      {
        matches: [PREFIX_ROOT],
        backends: [
          { ...HTTP_WEB, weight: 90 },
          { service: "shop/web-v2", port: 7070, weight: 10, appProtocol: "kubernetes.io/h2c" },
          { service: "shop/api", port: 8080 },
          {
            ...HTTP_WEB,
            filters: [
              {
                urlRewrite: { path: { type: "PATH_MODIFIER_TYPE_REPLACE_FULL_PATH", value: "/x" } },
              },
            ],
          },
        ],
      },
    ],
    [
      "timeouts",
      { timeouts: { request: "10s", backendRequest: "1500ms" }, backendRefs: [backend()] },
      {
        matches: [PREFIX_ROOT],
        backends: [HTTP_WEB],
        timeouts: { request: "10s", backendRequest: "1.500s" },
      },
    ],
    [
      "a zero request timeout (disabled) allows any backend timeout",
      { timeouts: { request: "0s", backendRequest: "1h" } },
      { matches: [PREFIX_ROOT], timeouts: { request: "0s", backendRequest: "3600s" } },
    ],
  ];
  for (const [name, rule, expected] of cases) {
    it(name, () => {
      expect(ruleJson(accepted(projectRoute(httpRule(rule), WORLD)))).toEqual(expected);
    });
  }

  it("carries identity, hostnames and the creation time, ignoring parentRefs", () => {
    const object = {
      apiVersion: GW,
      kind: "HTTPRoute",
      metadata: { namespace: NS, name: "r", creationTimestamp: "2025-03-01T10:00:00.5Z" },
      spec: { parentRefs: [parent("web")], hostnames: ["web.example.com", "*.example.org"] },
    };
    const r = accepted(projectRoute(object, WORLD));
    expect(toJson(RouteSchema, r)).toEqual({
      kind: "ROUTE_KIND_HTTP",
      namespace: NS,
      name: "r",
      creationTime: "2025-03-01T10:00:00.500Z",
      hostnames: ["web.example.com", "*.example.org"],
      // An HTTPRoute without rules gets the CRD default: one rule, no backends (500).
      rules: [{ matches: [PREFIX_ROOT] }],
    });
    expect(r.role).toBe(RouteRole.UNSPECIFIED);
    expect(r.parentRefs).toEqual([]);
  });

  it("gives the same result from an index and from the object list", () => {
    const object = httpRule({ backendRefs: [backend("backend", { namespace: OTHER })] });
    const index = createObjectIndex(WORLD);
    expect(projectRoute(object, index)).toEqual(projectRoute(object, WORLD));
  });
});

// ---------------------------------------------------------------- projectRoute: gRPC

describe("projectRoute: GRPCRoute rules", () => {
  const GRPC_WEB = { service: "shop/web", port: 7070, weight: 1, appProtocol: "kubernetes.io/h2c" };
  const cases: [string, Spec, JsonValue][] = [
    [
      "a rule without matches matches every call",
      { backendRefs: [backend("web", { port: 7070 })] },
      { backends: [GRPC_WEB] },
    ],
    [
      "method matches: exact, service only, method only, regex; headers",
      {
        matches: [
          { method: { service: "pkg.Echo", method: "Say" } },
          { method: { service: "pkg.Echo" } },
          { method: { type: "Exact", method: "Say" } },
          { method: { type: "RegularExpression", service: "pkg\\..*", method: "S.*" } },
          { headers: [{ name: "X-Tenant", value: "a" }] },
          {},
        ],
      },
      {
        matches: [
          { grpcMethod: { type: "STRING_MATCH_TYPE_EXACT", service: "pkg.Echo", method: "Say" } },
          { grpcMethod: { type: "STRING_MATCH_TYPE_EXACT", service: "pkg.Echo" } },
          { grpcMethod: { type: "STRING_MATCH_TYPE_EXACT", method: "Say" } },
          {
            grpcMethod: {
              type: "STRING_MATCH_TYPE_REGULAR_EXPRESSION",
              service: "pkg\\..*",
              method: "S.*",
            },
          },
          { headers: [{ type: "STRING_MATCH_TYPE_EXACT", name: "x-tenant", value: "a" }] },
          {},
        ],
      },
    ],
    [
      "filters and backend filters",
      {
        filters: [
          {
            type: "RequestHeaderModifier",
            requestHeaderModifier: { set: [{ name: "x-a", value: "1" }] },
          },
          {
            type: "ResponseHeaderModifier",
            responseHeaderModifier: { remove: ["x-b"] },
          },
          {
            type: "RequestMirror",
            requestMirror: { backendRef: backend("web-v2", { port: 7070 }) },
          },
          { type: "ExtensionRef", extensionRef: { group: "", kind: "ConfigMap", name: "x" } },
        ],
        backendRefs: [
          backend("web", {
            port: 7070,
            weight: 3,
            filters: [
              {
                type: "RequestHeaderModifier",
                requestHeaderModifier: { add: [{ name: "x-backend", value: "web" }] },
              },
            ],
          }),
        ],
      },
      {
        filters: [
          { requestHeaderModifier: { set: [{ name: "x-a", value: "1" }] } },
          { responseHeaderModifier: { remove: ["x-b"] } },
          {
            requestMirror: {
              backend: { service: "shop/web-v2", port: 7070, appProtocol: "kubernetes.io/h2c" },
            },
          },
          { extensionRef: { kind: "ConfigMap", name: "x" } },
        ],
        backends: [
          {
            ...GRPC_WEB,
            weight: 3,
            filters: [{ requestHeaderModifier: { add: [{ name: "x-backend", value: "web" }] } }],
          },
        ],
      },
    ],
  ];
  for (const [name, rule, expected] of cases) {
    it(name, () => {
      const object = grpc("g", { parentRefs: [parent("web")], rules: [rule] });
      const r = accepted(projectRoute(object, WORLD));
      expect(r.kind).toBe(2);
      expect(ruleJson(r)).toEqual(expected);
    });
  }
  it("a GRPCRoute without rules has none", () => {
    expect(accepted(projectRoute(grpc("g", {}), WORLD)).rules).toEqual([]);
  });
});

// ---------------------------------------------------------------- rejections

describe("projectRoute: rejections", () => {
  const huge = "x".repeat(1_000_000);
  const cases: [string, KubeObject, string, RegExp][] = [
    // invalid_regex
    [
      "lookahead in a path",
      httpRule({ matches: [{ path: { type: "RegularExpression", value: "/(?=a)" } }] }),
      "invalid_regex",
      /^spec\.rules\[0\]\.matches\[0\]\.path\.value "\/\(\?=a\)" is not a usable regular expression: it is not RE2 syntax: invalid or unsupported Perl syntax/,
    ],
    [
      "unbalanced header regex",
      httpRule({ matches: [{ headers: [{ type: "RegularExpression", name: "x", value: "(a" }] }] }),
      "invalid_regex",
      /^spec\.rules\[0\]\.matches\[0\]\.headers\[0\]\.value .*missing closing \)/,
    ],
    [
      "backreference in a query param",
      httpRule({
        matches: [{ queryParams: [{ type: "RegularExpression", name: "q", value: "(a)\\1" }] }],
      }),
      "invalid_regex",
      /queryParams\[0\]\.value .*invalid escape sequence: `\\1`/,
    ],
    [
      "a repetition count RE2 refuses in a gRPC method",
      grpc("g", {
        rules: [{ matches: [{ method: { type: "RegularExpression", method: "s{1001}ay" } }] }],
      }),
      "invalid_regex",
      /^spec\.rules\[0\]\.matches\[0\]\.method\.method .*invalid repeat count/,
    ],
    // unknown_filter
    [
      "an unknown HTTP filter",
      httpRule({ filters: [{ type: "Teleport", teleport: {} }] }),
      "unknown_filter",
      /^spec\.rules\[0\]\.filters\[0\]\.type "Teleport" is not a filter type of HTTPRoute/,
    ],
    [
      "an HTTP-only filter in a GRPCRoute",
      grpc("g", { rules: [{ filters: [{ type: "URLRewrite", urlRewrite: {} }] }] }),
      "unknown_filter",
      /filters\[0\]\.type "URLRewrite" is not a filter type of GRPCRoute/,
    ],
    [
      "an unknown backend filter",
      httpRule({ backendRefs: [backend("web", { filters: [{ type: "Nope" }] })] }),
      "unknown_filter",
      /^spec\.rules\[0\]\.backendRefs\[0\]\.filters\[0\]\.type "Nope"/,
    ],
    // weight_out_of_range
    [
      "a weight above 1000000",
      httpRule({ backendRefs: [backend("web", { weight: 1_000_001 })] }),
      "weight_out_of_range",
      /^spec\.rules\[0\]\.backendRefs\[0\]\.weight is 1000001; it must be between 0 and 1000000/,
    ],
    [
      "a negative weight",
      httpRule({ backendRefs: [backend("web", { weight: -1 })] }),
      "weight_out_of_range",
      /weight is -1/,
    ],
    // unsupported_field
    [
      "sessionPersistence",
      httpRule({ sessionPersistence: { type: "Cookie" } }),
      "unsupported_field",
      /sessionPersistence is not supported by the projection: Gateway API v1\.7 deprecates/,
    ],
    [
      "an unknown spec field",
      http("r", { parentRefs: [], teleport: true }),
      "unsupported_field",
      /^spec\.teleport is not a known field/,
    ],
    [
      "an unknown match field",
      httpRule({ matches: [{ body: "x" }] }),
      "unsupported_field",
      /^spec\.rules\[0\]\.matches\[0\]\.body is not a known field/,
    ],
    [
      "ExternalAuth",
      httpRule({ filters: [{ type: "ExternalAuth", externalAuth: {} }] }),
      "unsupported_field",
      /filter type ExternalAuth is not supported/,
    ],
    [
      "timeouts in a GRPCRoute",
      grpc("g", { rules: [{ timeouts: { request: "1s" } }] }),
      "unsupported_field",
      /^spec\.rules\[0\]\.timeouts is not a known field/,
    ],
    // invalid_object
    [
      "no metadata",
      { apiVersion: GW, kind: "HTTPRoute", spec: {} },
      "invalid_object",
      /^metadata is required/,
    ],
    [
      "no namespace",
      { apiVersion: GW, kind: "HTTPRoute", metadata: { name: "r" }, spec: {} },
      "invalid_object",
      /^metadata\.namespace is required/,
    ],
    [
      "a numeric name",
      {
        apiVersion: GW,
        kind: "HTTPRoute",
        metadata: { name: 7, namespace: NS },
        spec: {},
      } as unknown as KubeObject,
      "invalid_object",
      /^metadata\.name must be a string, not the number 7/,
    ],
    [
      "a spec that is a string",
      http("r", "spec"),
      "invalid_object",
      /^spec must be an object, not a string/,
    ],
    ["no spec", http("r", undefined), "invalid_object", /^spec is required/],
    [
      "rules that are an object",
      http("r", { rules: { a: 1 } }),
      "invalid_object",
      /^spec\.rules must be a list, not an object/,
    ],
    [
      "a null rule",
      http("r", { rules: [null] }),
      "invalid_object",
      /^spec\.rules\[0\] must be an object, not null/,
    ],
    [
      "a numeric path value",
      httpRule({ matches: [{ path: { value: 5 } }] }),
      "invalid_object",
      /^spec\.rules\[0\]\.matches\[0\]\.path\.value must be a string, not the number 5/,
    ],
    [
      "a numeric header value",
      httpRule({ matches: [{ headers: [{ name: "x", value: 1 }] }] }),
      "invalid_object",
      /headers\[0\]\.value must be a string, not the number 1/,
    ],
    [
      "a string port",
      httpRule({ backendRefs: [{ name: "web", port: "80" }] }),
      "invalid_object",
      /^spec\.rules\[0\]\.backendRefs\[0\]\.port must be an integer, not a string/,
    ],
    [
      "a fractional weight",
      httpRule({ backendRefs: [backend("web", { weight: 1.5 })] }),
      "invalid_object",
      /weight must be an integer, not the number 1\.5/,
    ],
    [
      "a backendRef without a name",
      httpRule({ backendRefs: [{ port: 80 }] }),
      "invalid_object",
      /^spec\.rules\[0\]\.backendRefs\[0\]\.name is required/,
    ],
    [
      "a parentRef that is a number",
      http("r", { parentRefs: [5] }),
      "invalid_object",
      /^spec\.parentRefs\[0\] must be an object, not a number/,
    ],
    [
      "a string allowCredentials",
      httpRule({ filters: [{ type: "CORS", cors: { allowCredentials: "yes" } }] }),
      "invalid_object",
      /cors\.allowCredentials must be a boolean/,
    ],
    [
      "a Service (not a route)",
      service("web"),
      "invalid_object",
      /is not an HTTPRoute or GRPCRoute/,
    ],
    // invalid_value
    [
      "a relative path",
      httpRule({ matches: [{ path: { type: "Exact", value: "abc" } }] }),
      "invalid_value",
      /^spec\.rules\[0\]\.matches\[0\]\.path\.value "abc": it must be an absolute path/,
    ],
    [
      "a path with //",
      httpRule({ matches: [{ path: { value: "/a//b" } }] }),
      "invalid_value",
      /path\.value "\/a\/\/b": it must not contain "\/\/"/,
    ],
    [
      "an unknown path type",
      httpRule({ matches: [{ path: { type: "Glob", value: "/a" } }] }),
      "invalid_value",
      /path\.type is "Glob"; it must be one of Exact, PathPrefix, RegularExpression/,
    ],
    [
      "an unknown method",
      httpRule({ matches: [{ method: "FETCH" }] }),
      "invalid_value",
      /matches\[0\]\.method is "FETCH"/,
    ],
    [
      "a bad header name",
      httpRule({ matches: [{ headers: [{ name: "bad header", value: "x" }] }] }),
      "invalid_value",
      /headers\[0\]\.name "bad header" is not a valid header name/,
    ],
    [
      "an empty header value",
      httpRule({ matches: [{ headers: [{ name: "x", value: "" }] }] }),
      "invalid_value",
      /headers\[0\]\.value must not be empty/,
    ],
    [
      "a redirect status 300",
      httpRule({ filters: [{ type: "RequestRedirect", requestRedirect: { statusCode: 300 } }] }),
      "invalid_value",
      /requestRedirect\.statusCode is 300; it must be one of 301, 302, 303, 307, 308/,
    ],
    [
      "a redirect scheme ftp",
      httpRule({ filters: [{ type: "RequestRedirect", requestRedirect: { scheme: "ftp" } }] }),
      "invalid_value",
      /requestRedirect\.scheme is "ftp"/,
    ],
    [
      "a redirect port 0",
      httpRule({ filters: [{ type: "RequestRedirect", requestRedirect: { port: 0 } }] }),
      "invalid_value",
      /requestRedirect\.port is 0; it must be between 1 and 65535/,
    ],
    [
      "a rewrite hostname with a wildcard",
      httpRule({ filters: [{ type: "URLRewrite", urlRewrite: { hostname: "*.x.com" } }] }),
      "invalid_value",
      /urlRewrite\.hostname "\*\.x\.com" is not a valid hostname/,
    ],
    [
      "a path modifier without its value",
      httpRule({
        filters: [{ type: "URLRewrite", urlRewrite: { path: { type: "ReplaceFullPath" } } }],
      }),
      "invalid_value",
      /urlRewrite\.path\.replaceFullPath is required when type is ReplaceFullPath/,
    ],
    [
      "a path modifier with the other value",
      httpRule({
        filters: [
          {
            type: "URLRewrite",
            urlRewrite: {
              path: { type: "ReplaceFullPath", replaceFullPath: "/a", replacePrefixMatch: "/b" },
            },
          },
        ],
      }),
      "invalid_value",
      /replacePrefixMatch must not be set when type is ReplaceFullPath/,
    ],
    [
      "a Service backend without a port",
      httpRule({ backendRefs: [{ name: "web" }] }),
      "invalid_value",
      /^spec\.rules\[0\]\.backendRefs\[0\]\.port is required for a Service backend/,
    ],
    [
      "a backend port 70000",
      httpRule({ backendRefs: [backend("web", { port: 70000 })] }),
      "invalid_value",
      /backendRefs\[0\]\.port is 70000/,
    ],
    [
      "an invalid hostname",
      http("r", { hostnames: ["Bad_Host"] }),
      "invalid_value",
      /^spec\.hostnames\[0\] "Bad_Host" is not a valid hostname/,
    ],
    [
      "a rule name that is not a DNS name",
      httpRule({ name: "Not Valid" }),
      "invalid_value",
      /^spec\.rules\[0\]\.name "Not Valid"/,
    ],
    [
      "17 rules",
      http("r", { rules: Array.from({ length: 17 }, () => ({})) }),
      "invalid_value",
      /^spec\.rules has 17 entries; at most 16 are allowed/,
    ],
    [
      "129 matches in all",
      http("r", {
        rules: Array.from({ length: 3 }, () => ({
          matches: Array.from({ length: 43 }, () => ({})),
        })),
      }),
      "invalid_value",
      /spec\.rules have 129 matches in all; at most 128/,
    ],
    [
      "a mirror with percent and fraction",
      httpRule({
        filters: [
          {
            type: "RequestMirror",
            requestMirror: { backendRef: backend(), percent: 5, fraction: { numerator: 1 } },
          },
        ],
      }),
      "invalid_value",
      /requestMirror must not set both percent and fraction/,
    ],
    [
      "a mirror fraction above 1",
      httpRule({
        filters: [
          {
            type: "RequestMirror",
            requestMirror: { backendRef: backend(), fraction: { numerator: 3, denominator: 2 } },
          },
        ],
      }),
      "invalid_value",
      /fraction\.numerator must not be greater than its denominator/,
    ],
    [
      "a mirror percent of 101",
      httpRule({
        filters: [
          { type: "RequestMirror", requestMirror: { backendRef: backend(), percent: 101 } },
        ],
      }),
      "invalid_value",
      /requestMirror\.percent is 101/,
    ],
    [
      "CORS * with other origins",
      httpRule({ filters: [{ type: "CORS", cors: { allowOrigins: ["*", "https://a.com"] } }] }),
      "invalid_value",
      /cors\.allowOrigins must not contain "\*" alongside other values/,
    ],
    [
      "a bad CORS origin",
      httpRule({ filters: [{ type: "CORS", cors: { allowOrigins: ["a.com"] } }] }),
      "invalid_value",
      /cors\.allowOrigins\[0\] "a\.com" is not a valid origin/,
    ],
    [
      "a CORS maxAge of 0",
      httpRule({ filters: [{ type: "CORS", cors: { maxAge: 0 } }] }),
      "invalid_value",
      /cors\.maxAge is 0/,
    ],
    [
      "a backend timeout above the request timeout",
      httpRule({ timeouts: { request: "1s", backendRequest: "2s" } }),
      "invalid_value",
      /timeouts\.backendRequest must not be longer than spec\.rules\[0\]\.timeouts\.request/,
    ],
    [
      "a bad creation timestamp",
      {
        apiVersion: GW,
        kind: "HTTPRoute",
        metadata: { name: "r", namespace: NS, creationTimestamp: "yesterday" },
        spec: {},
      },
      "invalid_value",
      /^metadata\.creationTimestamp "yesterday" is not an RFC 3339 timestamp/,
    ],
    [
      "an empty gRPC method match",
      grpc("g", { rules: [{ matches: [{ method: {} }] }] }),
      "invalid_value",
      /^spec\.rules\[0\]\.matches\[0\]\.method must set service, method or both/,
    ],
    [
      "a bad exact gRPC service",
      grpc("g", { rules: [{ matches: [{ method: { service: "a/b" } }] }] }),
      "invalid_value",
      /method\.service "a\/b" is not a valid gRPC service name/,
    ],
    [
      "a backendRef to a bad namespace",
      httpRule({ backendRefs: [backend("web", { namespace: "Not_A_Label" })] }),
      "invalid_value",
      /backendRefs\[0\]\.namespace "Not_A_Label" is not a DNS-1123 label/,
    ],
    [
      "a 1 MB path",
      httpRule({ matches: [{ path: { value: `/${huge}` } }] }),
      "invalid_value",
      /path\.value must be at most 1024 characters long/,
    ],
    [
      "a million rules",
      http("r", { rules: Array.from({ length: 1_000_000 }, () => ({})) }),
      "invalid_value",
      /spec\.rules has 1000000 entries/,
    ],
    // invalid_duration
    [
      "a timeout in days",
      httpRule({ timeouts: { request: "1d" } }),
      "invalid_duration",
      /^spec\.rules\[0\]\.timeouts\.request "1d" is not a Gateway API duration/,
    ],
    [
      "a fractional timeout",
      httpRule({ timeouts: { backendRequest: "1.5s" } }),
      "invalid_duration",
      /timeouts\.backendRequest "1\.5s"/,
    ],
    // invalid_filter
    [
      "redirect and rewrite together",
      httpRule({
        filters: [
          { type: "RequestRedirect", requestRedirect: {} },
          { type: "URLRewrite", urlRewrite: {} },
        ],
      }),
      "invalid_filter",
      /^spec\.rules\[0\]\.filters has both a RequestRedirect and a URLRewrite filter/,
    ],
    [
      "a repeated header modifier",
      httpRule({
        filters: [
          { type: "RequestHeaderModifier", requestHeaderModifier: {} },
          { type: "RequestHeaderModifier", requestHeaderModifier: {} },
        ],
      }),
      "invalid_filter",
      /filters\[1\]: a RequestHeaderModifier filter cannot be repeated/,
    ],
    [
      "a redirect with backendRefs",
      httpRule({
        filters: [{ type: "RequestRedirect", requestRedirect: {} }],
        backendRefs: [backend()],
      }),
      "invalid_filter",
      /has a RequestRedirect filter, which must not be used together with backendRefs/,
    ],
    [
      "ReplacePrefixMatch with an Exact match",
      httpRule({
        matches: [{ path: { type: "Exact", value: "/a" } }],
        filters: [
          {
            type: "RequestRedirect",
            requestRedirect: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/b" } },
          },
        ],
      }),
      "invalid_filter",
      /^spec\.rules\[0\] uses a ReplacePrefixMatch path modifier, which requires exactly one match, of type PathPrefix/,
    ],
    [
      "ReplacePrefixMatch with two matches",
      httpRule({
        matches: [{ path: { value: "/a" } }, { path: { value: "/b" } }],
        filters: [
          {
            type: "URLRewrite",
            urlRewrite: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/c" } },
          },
        ],
      }),
      "invalid_filter",
      /requires exactly one match/,
    ],
    [
      "a backend ReplacePrefixMatch with a regex match",
      httpRule({
        matches: [{ path: { type: "RegularExpression", value: "/a.*" } }],
        backendRefs: [
          backend("web", {
            filters: [
              {
                type: "URLRewrite",
                urlRewrite: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/c" } },
              },
            ],
          }),
        ],
      }),
      "invalid_filter",
      /requires exactly one match/,
    ],
    [
      "a filter without its config",
      httpRule({ filters: [{ type: "RequestHeaderModifier" }] }),
      "invalid_filter",
      /filters\[0\]\.requestHeaderModifier is required when the filter type is RequestHeaderModifier/,
    ],
    [
      "a filter with another type's config",
      httpRule({
        filters: [{ type: "RequestHeaderModifier", requestHeaderModifier: {}, urlRewrite: {} }],
      }),
      "invalid_filter",
      /filters\[0\]\.urlRewrite must not be set when the filter type is RequestHeaderModifier/,
    ],
  ];
  for (const [name, object, reason, message] of cases) {
    it(`${reason}: ${name}`, () => {
      const rejection = rejected(projectRoute(object, WORLD));
      expect(rejection.message).toMatch(message);
      expect(rejection.reason).toBe(reason);
      expect(ROUTE_REJECTION_REASONS).toContain(reason);
      expect(rejection.services).toEqual([]);
    });
  }

  it("names the route in the rejection", () => {
    const rejection = rejected(projectRoute(grpc("g", { rules: "x" }, OTHER), WORLD));
    expect(rejection.route).toEqual({ kind: "GRPCRoute", namespace: OTHER, name: "g" });
  });
});

// ---------------------------------------------------------------- unresolved backends

describe("projectRoute: unresolvable backendRefs stay as 500s", () => {
  const cases: [string, Spec, string, RegExp][] = [
    [
      "a missing Service",
      backend("nonexistent"),
      "backend_not_found",
      /^spec\.rules\[0\]\.backendRefs\[1\] refers to Service shop\/nonexistent, which does not exist; requests routed to it get a 500$/,
    ],
    [
      "a missing port",
      backend("web", { port: 9999 }),
      "backend_not_found",
      /refers to port 9999 of Service shop\/web, which has no such port/,
    ],
    [
      "another kind",
      { group: "example.com", kind: "Bucket", name: "b", port: 80 },
      "unsupported_backend",
      /refers to Bucket\.example\.com shop\/b, which is not a Service/,
    ],
    [
      "a core kind other than Service",
      { kind: "Pod", name: "p" },
      "unsupported_backend",
      /refers to Pod shop\/p, which is not a Service/,
    ],
    [
      "an ExternalName Service",
      backend("legacy"),
      "unsupported_backend",
      /Service shop\/legacy, which is of type ExternalName/,
    ],
    [
      "another namespace without a ReferenceGrant",
      backend("backend", { namespace: OTHER }),
      "ref_not_permitted",
      /refers to Service client\/backend in another namespace, and no ReferenceGrant in client permits it/,
    ],
  ];
  for (const [name, ref, reason, message] of cases) {
    it(`${reason}: ${name}`, () => {
      expect(ROUTE_WARNING_REASONS).toContain(reason);
      const object = httpRule({
        backendRefs: [backend("web", { weight: 3 }), { ...ref, weight: 1 }],
      });
      const result = projectRoute(object, WORLD);
      const r = accepted(result);
      // The unresolved backend keeps its weight, so a quarter of the requests get a 500.
      expect(ruleJson(r)).toEqual({
        matches: [PREFIX_ROOT],
        backends: [{ ...HTTP_WEB, weight: 3 }, { weight: 1 }],
      });
      expect("warnings" in result && result.warnings).toEqual([
        {
          route: { kind: "HTTPRoute", namespace: NS, name: "r" },
          reason,
          message: expect.stringMatching(message),
          services: [],
        },
      ]);
    });
  }

  it("a GRPCRoute's unresolved backend: calls routed to it get UNAVAILABLE", () => {
    const object = grpc("g", {
      rules: [{ backendRefs: [backend("nonexistent", { port: 7070 })] }],
    });
    const result = projectRoute(object, WORLD);
    expect(accepted(result).rules[0]?.backends.map((b) => [b.service, b.weight])).toEqual([
      ["", 1],
    ]);
    expect("warnings" in result && result.warnings.map((w) => [w.reason, w.message])).toEqual([
      [
        "backend_not_found",
        "spec.rules[0].backendRefs[0] refers to Service shop/nonexistent, which does not exist; calls routed to it get UNAVAILABLE",
      ],
    ]);
  });

  it("a ReferenceGrant permits a cross-namespace backend (Gateway semantics)", () => {
    const object = httpRule({ backendRefs: [backend("backend", { namespace: OTHER })] });
    for (const g of [grant(OTHER, NS), grant(OTHER, NS, "HTTPRoute", "backend")]) {
      const result = projectRoute(object, [...WORLD, g]);
      expect(accepted(result).rules[0]?.backends[0]?.service).toBe("client/backend");
      expect("warnings" in result && result.warnings).toEqual([]);
    }
  });

  it("a ReferenceGrant for another kind, namespace or name does not", () => {
    const object = httpRule({ backendRefs: [backend("backend", { namespace: OTHER })] });
    const wrong = [
      grant(OTHER, NS, "GRPCRoute"),
      grant(OTHER, "elsewhere"),
      grant(OTHER, NS, "HTTPRoute", "other"),
      grant(NS, NS),
    ];
    const result = projectRoute(object, [...WORLD, ...wrong]);
    expect(accepted(result).rules[0]?.backends[0]?.service).toBe("");
  });

  it("mesh semantics need no ReferenceGrant (GEP-1294)", () => {
    const object = httpRule({ backendRefs: [backend("backend", { namespace: OTHER })] });
    const result = projectRoute(object, WORLD, { mesh: true });
    expect(accepted(result).rules[0]?.backends[0]?.service).toBe("client/backend");
  });

  it("a mirror to an unresolvable backend is dropped with a warning", () => {
    const object = httpRule({
      filters: [{ type: "RequestMirror", requestMirror: { backendRef: backend("nonexistent") } }],
      backendRefs: [backend()],
    });
    const result = projectRoute(object, WORLD);
    expect(accepted(result).rules[0]?.filters).toEqual([]);
    expect("warnings" in result && result.warnings.map((w) => [w.reason, w.message])).toEqual([
      [
        "backend_not_found",
        "spec.rules[0].filters[0].requestMirror.backendRef refers to Service shop/nonexistent, which does not exist; the mirror is not applied",
      ],
    ]);
  });
});

// ---------------------------------------------------------------- the object index

describe("createObjectIndex", () => {
  const objects: KubeObject[] = [
    service("b", "ns-a"),
    service("a", "ns-b"),
    service("a", "ns-a"),
    service("z", "ns"),
    { apiVersion: "v1", kind: "Service", metadata: { name: "no-namespace" } },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "ns-a" } },
    {
      apiVersion: "gateway.networking.k8s.io/v1beta1",
      kind: "HTTPRoute",
      metadata: { namespace: "ns", name: "old" },
    },
    grant("ns-a", "ns"),
  ];
  const index = createObjectIndex(objects);

  it("lists objects by namespace, then name, whatever the input order", () => {
    expect(index.list(SERVICE).map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`)).toEqual([
      "ns/z",
      "ns-a/a",
      "ns-a/b",
      "ns-b/a",
    ]);
    expect(createObjectIndex([...objects].reverse()).list(SERVICE)).toEqual(index.list(SERVICE));
  });

  it("looks objects up by group (any version), kind, namespace and name", () => {
    expect(index.get(HTTP_ROUTE, "ns", "old")?.apiVersion).toBe(
      "gateway.networking.k8s.io/v1beta1",
    );
    expect(index.get({ group: "", kind: "Namespace" }, "", "ns-a")).toBeDefined();
    expect(index.get(SERVICE, "ns-a", "missing")).toBeUndefined();
    expect(index.unidentified(SERVICE)).toHaveLength(1);
    expect(index.isAmbiguous(SERVICE, "ns-a", "a")).toBe(false);
  });

  it("reads Services and ReferenceGrants", () => {
    expect(index.service("ns-a", "a")).toEqual({
      key: "ns-a/a",
      namespace: "ns-a",
      name: "a",
      ports: [
        { name: "http", port: 80, appProtocol: "http" },
        { name: "grpc", port: 7070, appProtocol: "kubernetes.io/h2c" },
        { name: "plain", port: 8080, appProtocol: "" },
      ],
      externalName: false,
    });
    expect(index.service("ns-a", "missing")).toBeUndefined();
    const to = { namespace: "ns-a", name: "a" };
    expect(index.isReferenceGranted(HTTP_ROUTE, "ns", SERVICE, to)).toBe(true);
    expect(index.isReferenceGranted(HTTP_ROUTE, "ns-b", SERVICE, to)).toBe(false);
    expect(
      index.isReferenceGranted(HTTP_ROUTE, "ns", SERVICE, { namespace: "ns-b", name: "a" }),
    ).toBe(false);
  });
});

// ---------------------------------------------------------------- projectServices

function summary(out: ProjectorOutput) {
  return Object.fromEntries(
    out.projections.map((p) => [
      p.service,
      p.routes.map((r) => ({
        route: `${r.kind === 1 ? "HTTPRoute" : "GRPCRoute"} ${r.namespace}/${r.name}`,
        role: RouteRole[r.role],
        parents: r.parentRefs.map((ref) => [ref.service, ref.port, ref.sectionName]),
      })),
    ]),
  );
}

describe("projectServices", () => {
  it("projects exported services only, each (even without routes) exactly once", () => {
    const out = projectServices([
      ...WORLD,
      http("to-internal", {
        parentRefs: [parent("internal")],
        rules: [{ backendRefs: [backend("internal")] }],
      }),
      serviceExport("ghost"),
    ]);
    expect(out.projections.map((p) => p.service)).toEqual(["shop/api", "shop/web", "shop/web-v2"]);
    for (const p of out.projections) {
      expect(p.version).toBe("");
      expect(p.originCluster).toBe("");
      expect(p.routes).toEqual([]);
    }
    expect(out.rejections).toEqual([]);
  });

  it("projects every routed service with exportAll", () => {
    const out = projectServices(
      [...WORLD, http("to-internal", { parentRefs: [parent("internal")] })],
      { exportAll: true },
    );
    expect(out.projections.map((p) => p.service)).toEqual([
      "shop/api",
      "shop/internal",
      "shop/web",
      "shop/web-v2",
    ]);
  });

  it("marks producer and consumer routes and sorts routes by kind, namespace, name", () => {
    const consumerParent = parent("web", { namespace: NS });
    const out = projectServices([
      ...WORLD,
      http("z-producer", { parentRefs: [parent("web")] }),
      http("a-producer", { parentRefs: [parent("web", { namespace: NS })] }),
      http("consumer", { parentRefs: [consumerParent] }, OTHER),
      grpc("grpc-producer", { parentRefs: [parent("web")] }),
    ]);
    expect(summary(out)["shop/web"]).toEqual([
      { route: "HTTPRoute client/consumer", role: "CONSUMER", parents: [["shop/web", 0, ""]] },
      { route: "HTTPRoute shop/a-producer", role: "PRODUCER", parents: [["shop/web", 0, ""]] },
      { route: "HTTPRoute shop/z-producer", role: "PRODUCER", parents: [["shop/web", 0, ""]] },
      { route: "GRPCRoute shop/grpc-producer", role: "PRODUCER", parents: [["shop/web", 0, ""]] },
    ]);
  });

  it("puts a route with several parents in each service, with that service's parentRefs", () => {
    const out = projectServices([
      ...WORLD,
      http("multi", {
        parentRefs: [
          parent("web", { port: 80 }),
          parent("api"),
          parent("web", { sectionName: "grpc" }),
          { name: "some-gateway" },
          parent("internal"),
        ],
        rules: [{ backendRefs: [backend()] }],
      }),
    ]);
    const s = summary(out);
    expect(s["shop/web"]).toEqual([
      {
        route: "HTTPRoute shop/multi",
        role: "PRODUCER",
        parents: [
          ["shop/web", 80, ""],
          ["shop/web", 7070, "grpc"],
        ],
      },
    ]);
    expect(s["shop/api"]).toEqual([
      { route: "HTTPRoute shop/multi", role: "PRODUCER", parents: [["shop/api", 0, ""]] },
    ]);
    expect(s["shop/web-v2"]).toEqual([]);
    const web = out.projections.find((p) => p.service === "shop/web")?.routes[0];
    const api = out.projections.find((p) => p.service === "shop/api")?.routes[0];
    expect(web?.rules).toEqual(api?.rules);
  });

  it("ignores routes attached only to Gateways or to out-of-scope services", () => {
    const out = projectServices([
      ...WORLD,
      http("gw", {
        parentRefs: [{ name: "gw" }],
        rules: [{ matches: [{ path: { value: "bad" } }] }],
      }),
      http("gw-explicit", {
        parentRefs: [{ group: "gateway.networking.k8s.io", kind: "Gateway", name: "gw" }],
      }),
      http("internal", { parentRefs: [parent("internal")], rules: "broken" }),
      http("missing", { parentRefs: [parent("missing")] }),
      http("wrong-group", { parentRefs: [{ kind: "Service", name: "web" }] }),
    ]);
    expect(out.rejections).toEqual([]);
    expect(out.projections.every((p) => p.routes.length === 0)).toBe(true);
  });

  it("rejects a bad route without dropping the service or its other routes", () => {
    const out = projectServices([
      ...WORLD,
      http("good", { parentRefs: [parent("web")], rules: [{ backendRefs: [backend()] }] }),
      http("bad", {
        parentRefs: [parent("web"), parent("api")],
        rules: [{}, { matches: [{ path: { type: "RegularExpression", value: "(?<=x)" } }] }],
      }),
    ]);
    expect(summary(out)["shop/web"]?.map((r) => r.route)).toEqual(["HTTPRoute shop/good"]);
    expect(summary(out)["shop/api"]).toEqual([]);
    expect(out.rejections).toEqual([
      {
        route: { kind: "HTTPRoute", namespace: NS, name: "bad" },
        reason: "invalid_regex",
        message: expect.stringMatching(/^spec\.rules\[1\]\.matches\[0\]\.path\.value "\(\?<=x\)"/),
        services: ["shop/api", "shop/web"],
      },
    ]);
  });

  it("reports unresolved backends as warnings naming the services", () => {
    const out = projectServices([
      ...WORLD,
      http("r", {
        parentRefs: [parent("web")],
        rules: [{ backendRefs: [backend("nonexistent")] }],
      }),
    ]);
    expect(out.rejections).toEqual([]);
    expect(out.warnings.map((w) => [w.reason, w.services])).toEqual([
      ["backend_not_found", ["shop/web"]],
    ]);
    expect(
      out.projections.find((p) => p.service === "shop/web")?.routes[0]?.rules[0]?.backends,
    ).toHaveLength(1);
  });

  it("uses mesh semantics for cross-namespace backends unless ReferenceGrants are required", () => {
    const objects = [
      ...WORLD,
      http("r", {
        parentRefs: [parent("web")],
        rules: [{ backendRefs: [backend("backend", { namespace: OTHER })] }],
      }),
    ];
    const serviceOf = (out: ProjectorOutput) =>
      out.projections.find((p) => p.service === "shop/web")?.routes[0]?.rules[0]?.backends[0]
        ?.service;
    expect(serviceOf(projectServices(objects))).toBe("client/backend");
    const strict = projectServices(objects, { requireReferenceGrants: true });
    expect(serviceOf(strict)).toBe("");
    expect(strict.warnings.map((w) => w.reason)).toEqual(["ref_not_permitted"]);
    expect(
      serviceOf(projectServices([...objects, grant(OTHER, NS)], { requireReferenceGrants: true })),
    ).toBe("client/backend");
  });

  it("resolves parentRef ports and section names, and rejects attachments to no port", () => {
    const out = projectServices([
      ...WORLD,
      http("partly", { parentRefs: [parent("web", { port: 80 }), parent("web", { port: 81 })] }),
      http("nowhere", { parentRefs: [parent("web", { sectionName: "nope" })] }),
      http("mismatch", { parentRefs: [parent("web", { sectionName: "http", port: 8080 })] }),
      http("agree", { parentRefs: [parent("web", { sectionName: "http", port: 80 })] }),
    ]);
    expect(summary(out)["shop/web"]).toEqual([
      { route: "HTTPRoute shop/agree", role: "PRODUCER", parents: [["shop/web", 80, "http"]] },
      { route: "HTTPRoute shop/partly", role: "PRODUCER", parents: [["shop/web", 80, ""]] },
    ]);
    expect(out.rejections.map((r) => [r.route.name, r.reason, r.message, r.services])).toEqual([
      [
        "mismatch",
        "no_matching_parent",
        'spec.parentRefs[0] names sectionName "http" and port 8080 of Service shop/web, which has no such port',
        ["shop/web"],
      ],
      [
        "nowhere",
        "no_matching_parent",
        'spec.parentRefs[0] names sectionName "nope" of Service shop/web, which has no such port',
        ["shop/web"],
      ],
    ]);
    expect(out.warnings.map((w) => [w.route.name, w.reason, w.message])).toEqual([
      [
        "partly",
        "no_matching_parent",
        "spec.parentRefs[1] names port 81 of Service shop/web, which has no such port",
      ],
    ]);
  });

  it("keeps one canonical form: empty timeouts and repeated parentRefs collapse", () => {
    const a = http("r", {
      parentRefs: [parent("web", { port: 80 }), parent("web", { port: 80 })],
      rules: [{ timeouts: {} }],
    });
    const b = http("r", { parentRefs: [parent("web", { port: 80 })], rules: [{}] });
    const bytes = (objects: KubeObject[]) =>
      projectServices(objects).projections.map((p) => toBinary(ServiceConfigProjectionSchema, p));
    expect(bytes([...WORLD, a])).toEqual(bytes([...WORLD, b]));
  });

  it("sorts rejections by kind, namespace, name, then message", () => {
    const bad = { parentRefs: [parent("web", { namespace: NS })], rules: "x" };
    const out = projectServices([
      ...WORLD,
      http("b", bad),
      grpc("a", bad),
      http("a", bad, OTHER),
      http("a", bad),
    ]);
    expect(
      out.rejections.map((r) => `${r.route.kind} ${r.route.namespace}/${r.route.name}`),
    ).toEqual(["GRPCRoute shop/a", "HTTPRoute client/a", "HTTPRoute shop/a", "HTTPRoute shop/b"]);
  });

  it("treats identical duplicates as one and rejects conflicting ones", () => {
    const one = http("dup", { parentRefs: [parent("web")] });
    const other = http("dup", { parentRefs: [parent("web")], hostnames: ["x.example"] });
    expect(
      summary(projectServices([...WORLD, one, structuredClone(one)]))["shop/web"],
    ).toHaveLength(1);
    const out = projectServices([...WORLD, one, other]);
    expect(summary(out)["shop/web"]).toEqual([]);
    expect(out.rejections.map((r) => [r.reason, r.message])).toEqual([
      ["duplicate_object", "the snapshot holds several different HTTPRoute objects named shop/dup"],
    ]);
  });

  it("is deterministic: any input order gives byte-identical output", () => {
    const objects: KubeObject[] = [
      ...WORLD,
      service("web", NS, { ports: [{ port: 80, name: "http" }] }), // a conflicting duplicate Service
      grant(OTHER, NS),
      http("a", {
        parentRefs: [parent("web"), parent("api")],
        rules: [{ backendRefs: [backend("web", { weight: 2 }), backend("nonexistent")] }],
      }),
      http("b", { parentRefs: [parent("web")], rules: [{ matches: [{ path: { value: "/b" } }] }] }),
      http(
        "c",
        {
          parentRefs: [parent("web", { namespace: NS })],
          rules: [{ matches: [{ path: { type: "RegularExpression", value: "(" } }] }],
        },
        OTHER,
      ),
      http("d", { parentRefs: [parent("web", { namespace: NS })] }, OTHER),
      grpc("e", {
        parentRefs: [parent("api")],
        rules: [{ backendRefs: [backend("api", { port: 7070 })] }],
      }),
      http("dup", { parentRefs: [parent("api")] }),
      http("dup", { parentRefs: [parent("api")], hostnames: ["a.b"] }),
      { apiVersion: GW, kind: "HTTPRoute", metadata: { name: "no-namespace" }, spec: {} },
      { apiVersion: GW, kind: "HTTPRoute", spec: {} },
    ];
    const fingerprint = (out: ProjectorOutput) =>
      JSON.stringify({
        projections: out.projections.map((p) =>
          Buffer.from(toBinary(ServiceConfigProjectionSchema, p)).toString("base64"),
        ),
        rejections: out.rejections,
        warnings: out.warnings,
      });
    const expected = fingerprint(projectServices(objects));
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    for (let round = 0; round < 20; round++) {
      const shuffled = [...objects];
      for (let i = shuffled.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [shuffled[i], shuffled[j]] = [shuffled[j] as KubeObject, shuffled[i] as KubeObject];
      }
      expect(fingerprint(projectServices(shuffled))).toBe(expected);
    }
    const out = projectServices(objects);
    expect(out.rejections.map((r) => r.reason).sort()).toEqual([
      "duplicate_object",
      "invalid_object",
      "invalid_object",
      "invalid_regex",
    ]);
  });

  it("never throws on malformed input", () => {
    const deep: Record<string, unknown> = {};
    let cursor = deep;
    for (let i = 0; i < 20_000; i++) {
      const next: Record<string, unknown> = {};
      cursor.x = next;
      cursor = next;
    }
    const garbage: unknown[] = [
      null,
      undefined,
      42,
      "HTTPRoute",
      [],
      {},
      { kind: "HTTPRoute" },
      { apiVersion: 5, kind: "HTTPRoute" },
      { apiVersion: GW, kind: "HTTPRoute", metadata: "x" },
      {
        apiVersion: GW,
        kind: "HTTPRoute",
        metadata: { namespace: NS, name: "deep" },
        spec: { parentRefs: [parent("web")], rules: [deep] },
      },
      http("deep2", { parentRefs: [parent("web")], rules: [{ matches: [deep] }] }),
      http("deep2", { parentRefs: [parent("web")], rules: [{ filters: [deep] }] }),
      http("parents-garbage", {
        parentRefs: [
          null,
          5,
          "x",
          { group: "", kind: "Service", name: 5 },
          parent("web", { port: "80" }),
        ],
      }),
      http("parents-not-list", { parentRefs: { name: "web" } }),
      http("rules-garbage", { parentRefs: [parent("web")], rules: [1, "x", [], null] }),
      http("huge", {
        parentRefs: [parent("web")],
        hostnames: Array.from({ length: 100_000 }, () => "a.b"),
      }),
      http("huge-string", {
        parentRefs: [parent("web")],
        rules: [{ name: "x".repeat(5_000_000) }],
      }),
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { namespace: NS, name: "svc-garbage" },
        spec: "x",
      },
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { namespace: NS, name: "svc-ports" },
        spec: { ports: [null, { port: "80" }, { port: 1e9 }, { port: 80, name: 5 }] },
      },
      { apiVersion: "v1", kind: "Service", metadata: { namespace: 5, name: "x" } },
      serviceExport("svc-garbage"),
      serviceExport("svc-ports"),
      { apiVersion: "multicluster.x-k8s.io/v1alpha1", kind: "ServiceExport" },
      {
        apiVersion: "gateway.networking.k8s.io/v1beta1",
        kind: "ReferenceGrant",
        metadata: { namespace: OTHER, name: "g" },
        spec: { from: "x", to: [null, { group: 5 }] },
      },
      http("to-garbage-svc", {
        parentRefs: [parent("svc-ports")],
        rules: [{ backendRefs: [backend("svc-ports"), backend("backend", { namespace: OTHER })] }],
      }),
    ];
    const objects = [...WORLD, ...(garbage as KubeObject[])];
    let out: ProjectorOutput | undefined;
    expect(() => {
      out = projectServices(objects);
    }).not.toThrow();
    expect(() => projectServices(null as unknown as KubeObject[])).not.toThrow();
    const index = createObjectIndex(objects);
    for (const object of garbage) {
      expect(() => projectRoute(object as KubeObject, index)).not.toThrow();
    }
    const services = out?.projections.map((p) => p.service);
    expect(services).toContain("shop/svc-garbage");
    expect(services).toContain("shop/svc-ports");
    const svcPorts = out?.projections.find((p) => p.service === "shop/svc-ports");
    // The well-formed port of the malformed Service still resolves; the rest are ignored.
    expect(
      svcPorts?.routes[0]?.rules[0]?.backends.map((b) => [b.service, b.port, b.appProtocol]),
    ).toEqual([
      ["shop/svc-ports", 80, ""],
      ["client/backend", 80, "http"],
    ]);
    const names = out?.rejections.map((r) => `${r.route.name}: ${r.reason}`);
    expect(names).toEqual(
      expect.arrayContaining([
        "deep: unsupported_field",
        "deep2: duplicate_object",
        "huge: invalid_value",
        "huge-string: invalid_value",
        "parents-garbage: invalid_object",
        "rules-garbage: invalid_object",
      ]),
    );
  });

  it("projects 10,000 services", () => {
    const objects: KubeObject[] = [];
    const count = 10_000;
    for (let i = 0; i < count; i++) {
      const namespace = `ns-${i % 100}`;
      const name = `svc-${i}`;
      objects.push(service(name, namespace), serviceExport(name, namespace));
      objects.push(
        http(
          `${name}-route`,
          {
            parentRefs: [parent(name, { port: 80 })],
            rules: [
              {
                matches: [
                  { path: { value: "/v2" }, headers: [{ name: "x-canary", value: "true" }] },
                ],
                filters: [
                  {
                    type: "RequestHeaderModifier",
                    requestHeaderModifier: { set: [{ name: "x-a", value: "b" }] },
                  },
                ],
                backendRefs: [
                  backend(name, { weight: 90 }),
                  backend(name, { port: 8080, weight: 10 }),
                ],
                timeouts: { request: "10s" },
              },
              {
                matches: [{ path: { type: "RegularExpression", value: "/api/[0-9]+" } }],
                backendRefs: [backend(name)],
              },
            ],
          },
          namespace,
        ),
      );
    }
    const out = projectServices(objects);
    expect(out.rejections).toEqual([]);
    expect(out.warnings).toEqual([]);
    expect(out.projections).toHaveLength(count);
    const sample = out.projections.find((p) => p.service === "ns-7/svc-4207");
    expect(
      sample?.routes.map((r) => [r.name, r.role, r.parentRefs[0]?.port, r.rules.length]),
    ).toEqual([["svc-4207-route", RouteRole.PRODUCER, 80, 2]]);
    expect(sample?.routes[0]?.rules[0]?.backends.map((b) => [b.service, b.port, b.weight])).toEqual(
      [
        ["ns-7/svc-4207", 80, 90],
        ["ns-7/svc-4207", 8080, 10],
      ],
    );
    expect(out.projections[0]?.service).toBe("ns-0/svc-0");
    expect(out.projections[1]?.service).toBe("ns-0/svc-100");
  });
});
