import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  describeHeaderChanges,
  formatExplanation,
  noConfigSentence,
} from "../../clients/aetherctl/explain-format.js";
import { buildExplainTarget } from "../../clients/aetherctl/explain-request.js";
import { toJsonText } from "../../clients/aetherctl/json-output.js";
import { constantRandom } from "../../clients/aetherctl/random-source.js";
import {
  HttpFilterPhase,
  HttpFilterSchema,
  PathMatchType,
  PathModifierType,
  RouteKind,
  RouteRole,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
  StringMatchType,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { evaluate } from "../../services/common/evaluator.js";
import { httpFiltersForPort } from "../../services/common/http-filter-selection.js";
import { explainTargetFromWeb } from "../support/explain-target.js";

const VERSION = "2026-11-29T12:00:00.000000000Z";

const checkout: ServiceConfigProjection = create(ServiceConfigProjectionSchema, {
  service: "shop/checkout",
  originCluster: "hub",
  version: VERSION,
  routes: [
    {
      kind: RouteKind.HTTP,
      namespace: "shop",
      name: "checkout",
      role: RouteRole.PRODUCER,
      parentRefs: [{ service: "shop/checkout", port: 8080 }],
      rules: [
        {
          name: "beta",
          matches: [{ headers: [{ type: StringMatchType.EXACT, name: "x-beta", value: "true" }] }],
          backends: [{ service: "shop/checkout-v2", port: 8080, weight: 1 }],
        },
        {
          name: "moved",
          matches: [{ path: { type: PathMatchType.PATH_PREFIX, value: "/old" } }],
          filters: [
            {
              filter: {
                case: "requestRedirect",
                value: {
                  scheme: "https",
                  statusCode: 301,
                  path: { type: PathModifierType.REPLACE_PREFIX_MATCH, value: "/new" },
                },
              },
            },
          ],
          retry: {},
        },
        {
          matches: [{ path: { type: PathMatchType.PATH_PREFIX, value: "/" } }],
          filters: [
            {
              filter: {
                case: "requestHeaderModifier",
                value: { set: [{ name: "x-routed-by", value: "aether" }], remove: ["x-debug"] },
              },
            },
            {
              filter: {
                case: "requestMirror",
                value: {
                  backend: { service: "shop/shadow", port: 80 },
                  fraction: { numerator: 50 },
                },
              },
            },
            { filter: { case: "urlRewrite", value: { hostname: "internal" } } },
          ],
          backends: [
            { service: "shop/checkout-v1", port: 8080, weight: 90 },
            { service: "shop/checkout-v2", port: 8080, weight: 10 },
          ],
          timeouts: { request: { seconds: 10n } },
          retry: { codes: [502, 503], attempts: 2, backoff: { nanos: 250_000_000 } },
        },
      ],
    },
  ],
});

function explain(
  positionals: string[],
  options: {
    headers?: string[];
    random?: number;
    projection?: ServiceConfigProjection | null;
  } = {},
): string {
  const target = explainTargetFromWeb(positionals, options.headers);
  const projection = options.projection === null ? undefined : (options.projection ?? checkout);
  const random = constantRandom(options.random ?? 0);
  const decision = evaluate({
    projections: projection === undefined ? [] : [projection],
    request: target.request,
    mesh: { service: target.service, port: target.port, callerNamespace: target.callerNamespace },
    random: random.next,
  });
  return formatExplanation({
    target,
    projection,
    view: "effective view",
    decision,
    random: random.description,
    httpFilters: httpFiltersForPort(projection, target.port),
  });
}

describe("formatExplanation", () => {
  it("names the service's HTTP filters that run for the request's port, in order; none: no line", () => {
    const headers = (name: string, port: number) =>
      create(HttpFilterSchema, {
        namespace: "shop",
        name,
        phase: HttpFilterPhase.AUTHN,
        targets: [{ service: "shop/checkout", port }],
        extension: { case: "headerMutation", value: { request: { remove: ["x-debug"] } } },
      });
    const projection = create(ServiceConfigProjectionSchema, {
      ...checkout,
      httpFilters: [headers("every-port", 0), headers("on-8080", 8080), headers("on-9", 9)],
    });
    expect(explain(["GET", "http://checkout.shop:8080/"], { projection })).toContain(
      "http filters:  1. shop/every-port (AuthN, priority 0): headers request: remove x-debug; 2. shop/on-8080 (AuthN, priority 0): headers request: remove x-debug\n",
    );
    const none = create(ServiceConfigProjectionSchema, {
      ...checkout,
      httpFilters: [headers("on-9", 9)],
    });
    expect(explain(["GET", "http://checkout.shop:8080/"], { projection: none })).not.toContain(
      "http filters",
    );
  });

  it.each([
    {
      name: "a weighted split at random 0: the first backend, its share, header changes, mirror, rewrite, timeouts, retry",
      positionals: ["GET", "http://checkout.shop:8080/cart?x=1"],
      options: {},
      want: [
        "request:     GET http://checkout.shop:8080/cart?x=1 from namespace web",
        "service:     shop/checkout port 8080",
        "decision:    forwarded, status 200",
        `decided by:  origin hub, version ${VERSION} (effective view)`,
        "route:       HTTPRoute shop/checkout (producer)",
        "rule:        2",
        "match:       0: path prefix /",
        "backend:     shop/checkout-v1:8080 (backend 0, weight 90, 90% of the rule's traffic)",
        "headers:     set x-routed-by: aether; remove x-debug",
        "rewrite:     path /cart?x=1, host internal",
        "mirrors:     shop/shadow:80 50% (this request is mirrored)",
        "timeouts:    request 10s",
        "retry:       on 502, 503 and connection errors, at most 2 retries, backoff 250ms",
        "reason:      HTTPRoute shop/checkout (from hub) rule 2 match 0 matched; forwarded to shop/checkout-v1:8080",
        "random:      constant 0 (choose with --random X or --seed-random N)",
        "",
      ].join("\n"),
    },
    {
      name: "the same split at random 0.95: the second backend, the mirror skipped",
      positionals: ["GET", "http://checkout.shop:8080/"],
      options: { random: 0.95 },
      want: expect.stringMatching(
        /backend: {5}shop\/checkout-v2:8080 \(backend 1, weight 10, 10% of the rule's traffic\)\n[\s\S]*mirrors: {5}shop\/shadow:80 50% \(this request is not mirrored\)/,
      ),
    },
    {
      name: "a header match",
      positionals: ["GET", "http://checkout.shop:8080/"],
      options: { headers: ["X-Beta: true"] },
      want: expect.stringContaining(
        'rule:        0 "beta"\nmatch:       0: header x-beta = "true"\nbackend:     shop/checkout-v2:8080 (backend 0, weight 1, 100% of the rule\'s traffic)\n',
      ),
    },
    {
      name: "a redirect prints its Location",
      positionals: ["GET", "http://checkout.shop:8080/old/page?q=1"],
      options: {},
      want: expect.stringMatching(
        /decision: {4}redirected, status 301\n[\s\S]*redirect: {4}301 Location: https:\/\/checkout\.shop\/new\/page\?q=1\n/,
      ),
    },
    {
      name: "a redirect is answered by the data plane: its rule's retry policy does not apply",
      positionals: ["GET", "http://checkout.shop:8080/old/page"],
      options: {},
      want: expect.not.stringContaining("retry:"),
    },
    {
      name: "no projection: passthrough to the service itself",
      positionals: ["GET", "http://checkout.shop:8080/"],
      options: { projection: null },
      want: [
        "request:     GET http://checkout.shop:8080/ from namespace web",
        "service:     shop/checkout port 8080",
        "decision:    passthrough, status 200",
        `decided by:  ${noConfigSentence("shop/checkout")}`,
        "backend:     shop/checkout:8080 (the service itself)",
        "reason:      no route attaches to shop/checkout:8080 for callers in web; the request goes to the Service",
        "random:      constant 0 (choose with --random X or --seed-random N)",
        "",
      ].join("\n"),
    },
    {
      name: "a port no route attaches to: passthrough, but the config is still named",
      positionals: ["GET", "http://checkout.shop:9999/"],
      options: {},
      want: expect.stringContaining(
        `decided by:  origin hub, version ${VERSION} (effective view)\n`,
      ),
    },
  ])("$name", ({ positionals, options, want }) => {
    expect(explain(positionals, options)).toEqual(want);
  });

  it.each([
    ["pkg.Svc/Do", "no-route, status 404 (gRPC Unimplemented)"],
    ["other.Svc/Do", "no-backend, status 503 (gRPC Unavailable)"],
  ])("prints the gRPC status of a gRPC call: %s", (method, want) => {
    const target = buildExplainTarget({
      positionals: ["http://checkout.shop:8080"],
      fromNamespace: "web",
      port: undefined,
      portName: "grpc",
      headers: [],
      grpc: method,
    });
    const grpcOnly = create(ServiceConfigProjectionSchema, {
      service: "shop/checkout",
      originCluster: "hub",
      version: VERSION,
      routes: [
        {
          kind: RouteKind.GRPC,
          namespace: "shop",
          name: "checkout-grpc",
          role: RouteRole.PRODUCER,
          parentRefs: [{ service: "shop/checkout", sectionName: "grpc" }],
          rules: [
            { matches: [{ grpcMethod: { type: StringMatchType.EXACT, service: "other.Svc" } }] },
          ],
        },
      ],
    });
    const decision = evaluate({
      projections: [grpcOnly],
      request: target.request,
      mesh: {
        service: target.service,
        port: target.port,
        portName: "grpc",
        callerNamespace: "web",
      },
    });
    const text = formatExplanation({
      target,
      projection: grpcOnly,
      view: "origin hub",
      decision,
      random: "constant 0",
    });
    expect(text).toContain("service:     shop/checkout port 8080 (grpc)\n");
    expect(text).toContain(`decision:    ${want}\n`);
    expect(text).toContain(`decided by:  origin hub, version ${VERSION} (origin hub)\n`);
    expect(text.includes("route:       GRPCRoute shop/checkout-grpc")).toBe(
      want.startsWith("no-backend"),
    );
  });
});

describe("describeHeaderChanges", () => {
  it.each([
    [[], ""],
    [[{ op: "set", name: "a", value: "1" }], "set a: 1"],
    [
      [
        { op: "add", name: "b", value: "2" },
        { op: "remove", name: "c", value: "" },
      ],
      "add b: 2; remove c",
    ],
  ] as const)("%j", (changes, want) => {
    expect(describeHeaderChanges(changes)).toBe(want);
  });
});

describe("toJsonText", () => {
  it("writes bigints as strings, messages as proto JSON, and undefined as null", () => {
    const match = checkout.routes[0]?.rules[0]?.matches[0];
    expect(
      JSON.parse(toJsonText({ big: 12345678901234567890n, match, missing: undefined, list: [1] })),
    ).toEqual({
      big: "12345678901234567890",
      match: { headers: [{ type: "STRING_MATCH_TYPE_EXACT", name: "x-beta", value: "true" }] },
      missing: null,
      list: [1],
    });
  });

  it("serializes a whole Decision", () => {
    const decision = evaluate({
      projections: [checkout],
      request: { kind: "http", method: "GET", host: "checkout.shop:8080", path: "/" },
      mesh: { service: "shop/checkout", port: 8080, callerNamespace: "web" },
    });
    const json = JSON.parse(toJsonText(decision));
    expect(json).toMatchObject({
      outcome: "forwarded",
      status: 200,
      route: { kind: "HTTPRoute", namespace: "shop", name: "checkout", originCluster: "hub" },
      ruleIndex: 2,
      backend: { service: "shop/checkout-v1", port: 8080, weight: 90, index: 0 },
      match: { path: { type: "PATH_MATCH_TYPE_PATH_PREFIX", value: "/" } },
      timeouts: { requestMs: 10_000, backendRequestMs: null },
      retry: { codes: [502, 503], attempts: 2, backoffMs: 250 },
    });
    expect(toJsonText(decision).endsWith("}\n")).toBe(true);
  });
});
