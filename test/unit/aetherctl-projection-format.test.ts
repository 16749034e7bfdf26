import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { formatListTable, listRow } from "../../clients/aetherctl/list-format.js";
import {
  describeFilter,
  describeMatch,
  describeParentRef,
  formatPercent,
  routeKindName,
  routeRoleName,
} from "../../clients/aetherctl/projection-describe.js";
import { describeRetry, formatProjectionTree } from "../../clients/aetherctl/projection-tree.js";
import type { SignatureReport } from "../../clients/aetherctl/signature-report.js";
import { createWatchPrinter, watchRow } from "../../clients/aetherctl/watch-format.js";
import {
  WatchConfigResponseSchema,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import {
  FilterSchema,
  PathMatchType,
  PathModifierType,
  RouteKind,
  RouteMatchSchema,
  RouteRole,
  ServiceConfigProjectionSchema,
  StringMatchType,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { DecisionRetry } from "../../services/common/evaluator-types.js";

const NOW = Date.parse("2026-11-29T12:05:00Z");
const UNSIGNED: SignatureReport = { keyId: undefined, algorithm: undefined, state: "unsigned" };
const VERIFIED: SignatureReport = {
  keyId: "5f0c6e2b9a1d3c47",
  algorithm: "ed25519",
  state: "verified",
};
const VERSION = "2026-11-29T12:00:00.000000000Z";

const checkout = create(ServiceConfigProjectionSchema, {
  service: "shop/checkout",
  originCluster: "hub",
  version: VERSION,
  routes: [
    {
      kind: RouteKind.HTTP,
      namespace: "shop",
      name: "checkout-canary",
      role: RouteRole.PRODUCER,
      creationTime: { seconds: BigInt(Date.parse("2026-11-01T09:00:00Z") / 1000) },
      parentRefs: [{ service: "shop/checkout", port: 8080 }],
      hostnames: ["checkout.example.com"],
      rules: [
        {
          name: "beta-testers",
          matches: [
            {
              path: { type: PathMatchType.PATH_PREFIX, value: "/cart" },
              headers: [{ type: StringMatchType.EXACT, name: "x-beta", value: "true" }],
            },
          ],
          filters: [
            {
              filter: {
                case: "requestHeaderModifier",
                value: { set: [{ name: "x-a", value: "1" }] },
              },
            },
          ],
          backends: [
            { service: "shop/checkout-v1", port: 8080, weight: 90 },
            {
              service: "shop/checkout-v2",
              port: 8080,
              weight: 10,
              appProtocol: "kubernetes.io/h2c",
              filters: [
                { filter: { case: "responseHeaderModifier", value: { remove: ["server"] } } },
              ],
            },
          ],
          timeouts: {
            request: { seconds: 10n },
            backendRequest: { seconds: 2n, nanos: 500_000_000 },
          },
          retry: { codes: [500, 503], attempts: 3, backoff: { nanos: 100_000_000 } },
        },
        { backends: [], retry: { attempts: 0 } },
      ],
    },
    {
      kind: RouteKind.GRPC,
      namespace: "web",
      name: "web-override",
      role: RouteRole.CONSUMER,
      parentRefs: [{ service: "shop/checkout" }, { service: "shop/checkout", sectionName: "grpc" }],
      rules: [
        {
          matches: [{ grpcMethod: { type: StringMatchType.EXACT, service: "shop.Cart" } }],
          backends: [{ service: "", port: 9090, weight: 1 }],
        },
        { backends: [] },
      ],
    },
  ],
});

describe("describeMatch", () => {
  type MatchInit = MessageInitShape<typeof RouteMatchSchema>;
  it.each<[string, MatchInit, string]>([
    ["no conditions", {}, "any request"],
    ["exact path", { path: { type: PathMatchType.EXACT, value: "/a" } }, "path = /a"],
    [
      "prefix and method",
      { path: { type: PathMatchType.PATH_PREFIX, value: "/" }, method: "POST" },
      "path prefix /, method POST",
    ],
    [
      "regex path",
      { path: { type: PathMatchType.REGULAR_EXPRESSION, value: "/v[0-9]+" } },
      'path ~ "/v[0-9]+"',
    ],
    [
      "headers and query",
      {
        headers: [{ type: StringMatchType.REGULAR_EXPRESSION, name: "x-user", value: "a.*" }],
        queryParams: [{ type: StringMatchType.EXACT, name: "debug", value: "1" }],
      },
      'header x-user ~ "a.*", query debug = "1"',
    ],
    [
      "grpc service only",
      { grpcMethod: { type: StringMatchType.EXACT, service: "pkg.S" } },
      "grpc pkg.S/*",
    ],
    [
      "grpc regex",
      { grpcMethod: { type: StringMatchType.REGULAR_EXPRESSION, method: "Get.*" } },
      "grpc ~ */Get.*",
    ],
  ])("%s", (_name, init, want) => {
    expect(describeMatch(create(RouteMatchSchema, init))).toBe(want);
  });
});

describe("describeFilter", () => {
  type FilterInit = MessageInitShape<typeof FilterSchema>["filter"];
  it.each<[string, FilterInit, string]>([
    [
      "request headers",
      {
        case: "requestHeaderModifier",
        value: {
          set: [{ name: "a", value: "1" }],
          add: [{ name: "b", value: "2" }],
          remove: ["c"],
        },
      },
      "request headers: set a: 1; add b: 2; remove c",
    ],
    [
      "response headers",
      { case: "responseHeaderModifier", value: { remove: ["server"] } },
      "response headers: remove server",
    ],
    [
      "redirect with everything",
      {
        case: "requestRedirect",
        value: {
          scheme: "https",
          hostname: "new.example",
          port: 8443,
          statusCode: 301,
          path: { type: PathModifierType.REPLACE_FULL_PATH, value: "/new" },
        },
      },
      "redirect 301 scheme https, host new.example, port 8443, path /new",
    ],
    ["redirect defaults to 302", { case: "requestRedirect", value: {} }, "redirect 302"],
    [
      "rewrite prefix",
      {
        case: "urlRewrite",
        value: {
          hostname: "h",
          path: { type: PathModifierType.REPLACE_PREFIX_MATCH, value: "/v2" },
        },
      },
      "rewrite host h, matched prefix → /v2",
    ],
    [
      "rewrite to an empty prefix",
      {
        case: "urlRewrite",
        value: { path: { type: PathModifierType.REPLACE_PREFIX_MATCH, value: "" } },
      },
      'rewrite matched prefix → ""',
    ],
    [
      "mirror with a fraction",
      {
        case: "requestMirror",
        value: { backend: { service: "shop/shadow", port: 80 }, fraction: { numerator: 5 } },
      },
      "mirror to shop/shadow:80 (5/100)",
    ],
    ["mirror without a backend", { case: "requestMirror", value: {} }, "mirror to (none)"],
    [
      "extension",
      { case: "extensionRef", value: { group: "x.io", kind: "Auth", name: "a" } },
      "extension x.io/Auth a",
    ],
    [
      "cors",
      {
        case: "cors",
        value: {
          allowOrigins: ["*.example.com"],
          allowMethods: ["GET"],
          allowCredentials: true,
          maxAgeSeconds: 60,
        },
      },
      "cors origins *.example.com; methods GET; credentials; max-age 60s",
    ],
    ["empty", { case: undefined }, "(empty filter)"],
  ])("%s", (_name, filter, want) => {
    expect(describeFilter(create(FilterSchema, { filter }))).toBe(want);
  });
});

describe("describeRetry", () => {
  it.each<[string, DecisionRetry | undefined, string]>([
    ["no policy", undefined, ""],
    [
      "everything set",
      { codes: [500, 502, 503], attempts: 3, backoffMs: 100 },
      "on 500, 502, 503 and connection errors, at most 3 retries, backoff 100ms",
    ],
    [
      "an empty stanza: connection errors, the data plane's defaults",
      { codes: [], attempts: undefined, backoffMs: undefined },
      "on connection errors, default attempts, default backoff",
    ],
    [
      "one retry, a long backoff",
      { codes: [429], attempts: 1, backoffMs: 90_500 },
      "on 429 and connection errors, at most 1 retry, backoff 1m30.5s",
    ],
    [
      "a zero backoff",
      { codes: [], attempts: 2, backoffMs: 0 },
      "on connection errors, at most 2 retries, backoff 0s",
    ],
    ["attempts 0 turns it off", { codes: [503], attempts: 0, backoffMs: 100 }, "off (attempts 0)"],
  ])("%s", (_name, retry, want) => {
    expect(describeRetry(retry)).toBe(want);
  });
});

describe("small names", () => {
  it("names kinds, roles, parent refs and percentages", () => {
    expect([RouteKind.HTTP, RouteKind.GRPC, RouteKind.UNSPECIFIED].map(routeKindName)).toEqual([
      "HTTPRoute",
      "GRPCRoute",
      "Route(unspecified)",
    ]);
    expect(
      [RouteRole.PRODUCER, RouteRole.CONSUMER, RouteRole.UNSPECIFIED].map(routeRoleName),
    ).toEqual(["producer", "consumer", "unspecified"]);
    const refs = checkout.routes[1]?.parentRefs ?? [];
    expect(refs.map(describeParentRef)).toEqual([
      "shop/checkout (every port)",
      "shop/checkout port grpc",
    ]);
    expect([100, 90, 100 / 3, 0].map(formatPercent)).toEqual(["100%", "90%", "33.3%", "0%"]);
  });
});

describe("formatProjectionTree", () => {
  it("prints the header and every route, rule, match, filter, backend, timeout and retry policy", () => {
    expect(formatProjectionTree(checkout, NOW, VERIFIED)).toBe(
      [
        "service:  shop/checkout",
        "origin:   hub",
        "signed:   key 5f0c6e2b9a1d3c47 of hub (ed25519): verified",
        "version:  2026-11-29T12:00:00.000000000Z (age 5m)",
        "routes:   2",
        "",
        "HTTPRoute shop/checkout-canary (producer, created 2026-11-01T09:00:00Z)",
        "  parents: shop/checkout:8080",
        "  hostnames: checkout.example.com",
        '  rule 0 "beta-testers"',
        '    match 0: path prefix /cart, header x-beta = "true"',
        "    filter: request headers: set x-a: 1",
        "    backend: shop/checkout-v1:8080 weight 90 (90%)",
        "    backend: shop/checkout-v2:8080 weight 10 (10%) [kubernetes.io/h2c]",
        "      filter: response headers: remove server",
        "    timeouts: request 10s, backend request 2.5s",
        "    retry: on 500, 503 and connection errors, at most 3 retries, backoff 100ms",
        "  rule 1",
        "    match: any request (the rule has no matches)",
        "    backend: none (requests get a 500)",
        "    retry: off (attempts 0)",
        "",
        "GRPCRoute web/web-override (consumer)",
        "  parents: shop/checkout (every port), shop/checkout port grpc",
        "  rule 0",
        "    match 0: grpc shop.Cart/*",
        "    backend: (unresolved):9090 weight 1 (100%)",
        "  rule 1",
        "    match: any request (the rule has no matches)",
        "    backend: none (calls get UNAVAILABLE)",
        "",
      ].join("\n"),
    );
  });

  it("prints only the header of a projection without routes", () => {
    const empty = create(ServiceConfigProjectionSchema, {
      service: "a/b",
      originCluster: "x",
      version: "bad",
    });
    expect(formatProjectionTree(empty, NOW, UNSIGNED)).toBe(
      "service:  a/b\norigin:   x\nsigned:   unsigned\nversion:  bad (age -)\nroutes:   0\n",
    );
  });
});

describe("list table", () => {
  it("counts routes and rules and computes the age", () => {
    expect(listRow(checkout, NOW, UNSIGNED)).toEqual([
      "shop/checkout",
      "hub",
      VERSION,
      "2",
      "4",
      "5m",
      "-",
    ]);
  });

  it("prints a table in the registrar's order, or a sentence when empty", () => {
    const other = create(ServiceConfigProjectionSchema, {
      service: "a/b",
      originCluster: "west",
      version: "2026-11-29T11:05:00Z",
    });
    const signatureOf = (p: { service: string }) => (p === checkout ? VERIFIED : UNSIGNED);
    expect(formatListTable([checkout, other], NOW, signatureOf)).toBe(
      [
        "SERVICE        ORIGIN  VERSION                         ROUTES  RULES  AGE  SIGNED",
        "shop/checkout  hub     2026-11-29T12:00:00.000000000Z  2       4      5m   5f0c6e2b9a1d3c47",
        "a/b            west    2026-11-29T11:05:00Z            0       0      1h   -",
        "",
      ].join("\n"),
    );
    expect(formatListTable([], NOW, signatureOf)).toBe("no projections\n");
  });
});

describe("watch lines", () => {
  const event = (init: Parameters<typeof create<typeof WatchConfigResponseSchema>>[1]) =>
    create(WatchConfigResponseSchema, init);
  it.each([
    [
      {
        type: WatchEventType.SNAPSHOT,
        revision: 3n,
        service: "shop/checkout",
        originCluster: "hub",
        projection: checkout,
      },
      ["SNAPSHOT", "3", "shop/checkout", "hub", VERSION],
    ],
    [
      { type: WatchEventType.SYNCED, revision: 3n },
      ["SYNCED", "3", "-", "-", "(snapshot complete)"],
    ],
    [
      { type: WatchEventType.SYNCED, revision: 9n, resumed: true },
      ["SYNCED", "9", "-", "-", "(resumed)"],
    ],
    [
      {
        type: WatchEventType.UPSERT,
        revision: 10n,
        service: "a/b",
        originCluster: "west",
        projection: { version: "v" },
      },
      ["UPSERT", "10", "a/b", "west", "v"],
    ],
    [
      { type: WatchEventType.DELETE, revision: 11n, service: "a/b", originCluster: "west" },
      ["DELETE", "11", "a/b", "west", "-"],
    ],
    [{ type: WatchEventType.KEEPALIVE, revision: 11n }, ["KEEPALIVE", "11", "-", "-", ""]],
    [{ type: 99 as WatchEventType, revision: 1n }, ["UNKNOWN(99)", "1", "", "", ""]],
  ])("%o", (init, want) => {
    expect(watchRow(event(init))).toEqual(want);
  });

  it("prints an aligned table, or one proto JSON object per line", () => {
    const table = createWatchPrinter("table");
    const synced = event({ type: WatchEventType.SYNCED, revision: 3n });
    expect(table.start()).toBe(
      "TYPE       REVISION  SERVICE                   ORIGIN    VERSION\n",
    );
    expect(table.event(synced)).toBe(
      "SYNCED     3         -                         -         (snapshot complete)\n",
    );
    const json = createWatchPrinter("json");
    expect(json.start()).toBe("");
    expect(json.event(synced)).toBe('{"type":"WATCH_EVENT_TYPE_SYNCED","revision":"3"}\n');
  });
});
