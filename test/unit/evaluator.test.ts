import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  PathMatchType,
  PathModifierType,
  type Route,
  RouteKind,
  RouteRole,
  type RouteRuleSchema,
  RouteSchema,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
  StringMatchType,
} from "../../gen/aether/registry/v1/projection_pb.js";
import {
  type Decision,
  type EvaluateInput,
  type EvaluatorRequest,
  evaluate,
  type MeshDestination,
} from "../../services/common/evaluator.js";

type RuleInit = MessageInitShape<typeof RouteRuleSchema>;
type RouteInit = Route;

/** The route fields a test may override. */
interface RouteExtra {
  kind?: RouteKind;
  namespace?: string;
  role?: RouteRole;
  creationTime?: { seconds?: bigint; nanos?: number };
  hostnames?: string[];
  parentRefs?: { service: string; port?: number; sectionName?: string }[];
}

const SVC = "shop/cart";
const EXACT = PathMatchType.EXACT;
const PREFIX = PathMatchType.PATH_PREFIX;
const REGEX = PathMatchType.REGULAR_EXPRESSION;

/** A rule whose single backend is `backend` (a service name in `shop`). */
function rule(backend: string, matches: RuleInit["matches"] = [], extra: RuleInit = {}): RuleInit {
  return { matches, backends: [{ service: `shop/${backend}`, port: 8080, weight: 1 }], ...extra };
}

function route(name: string, rules: RuleInit[], extra: RouteExtra = {}): RouteInit {
  return create(RouteSchema, {
    kind: RouteKind.HTTP,
    namespace: "shop",
    name,
    role: RouteRole.PRODUCER,
    parentRefs: [{ service: SVC, port: 0 }],
    rules,
    ...extra,
  });
}

function projection(routes: RouteInit[], origin = "east"): ServiceConfigProjection {
  return create(ServiceConfigProjectionSchema, { service: SVC, originCluster: origin, routes });
}

function http(
  path: string,
  extra: { method?: string; host?: string; headers?: Record<string, string | string[]> } = {},
): EvaluatorRequest {
  return {
    kind: "http",
    method: extra.method ?? "GET",
    host: extra.host ?? "cart",
    path,
    headers: extra.headers,
  };
}

function run(
  routes: RouteInit[],
  request: EvaluatorRequest,
  extra: Partial<EvaluateInput> = {},
): Decision {
  return evaluate({ projections: [projection(routes)], request, ...extra });
}

/** The name of the chosen backend service (without namespace), or the status when there is none. */
function outcome(decision: Decision): string | number {
  return decision.backend !== undefined && decision.status === 200
    ? (decision.backend.service.split("/")[1] as string)
    : decision.status;
}

const path = (type: PathMatchType, value: string) => ({ path: { type, value } });
const header = (name: string, value: string, type = StringMatchType.EXACT) => ({
  type,
  name,
  value,
});
const query = (name: string, value: string, type = StringMatchType.EXACT) => ({
  type,
  name,
  value,
});

describe("evaluate: HTTPRoute match precedence", () => {
  const r = (...rules: RuleInit[]) => [route("r", rules)];
  const cases: [
    name: string,
    routes: RouteInit[],
    request: EvaluatorRequest,
    expected: string | number,
  ][] = [
    [
      "an Exact path beats a PathPrefix of the same value",
      r(rule("prefix", [path(PREFIX, "/foo")]), rule("exact", [path(EXACT, "/foo")])),
      http("/foo"),
      "exact",
    ],
    [
      "the longest PathPrefix wins",
      r(
        rule("root", [path(PREFIX, "/")]),
        rule("foo-bar", [path(PREFIX, "/foo/bar")]),
        rule("foo", [path(PREFIX, "/foo")]),
      ),
      http("/foo/bar/baz"),
      "foo-bar",
    ],
    [
      "PathPrefix matches whole segments only",
      r(rule("root", [path(PREFIX, "/")]), rule("foo", [path(PREFIX, "/foo")])),
      http("/foobar"),
      "root",
    ],
    [
      "a PathPrefix with a trailing slash matches the bare path",
      r(rule("foo", [path(PREFIX, "/foo/")])),
      http("/foo"),
      "foo",
    ],
    ["paths are case-sensitive", r(rule("two", [path(EXACT, "/two")])), http("/Two"), 404],
    [
      "a PathPrefix beats a RegularExpression (implementation-specific: Exact > Prefix > Regex)",
      r(rule("regex", [path(REGEX, "/foo/.*")]), rule("root", [path(PREFIX, "/")])),
      http("/foo/x"),
      "root",
    ],
    [
      "an Exact path beats a RegularExpression",
      r(rule("regex", [path(REGEX, "/foo")]), rule("exact", [path(EXACT, "/foo")])),
      http("/foo"),
      "exact",
    ],
    [
      "a RegularExpression must match the whole path",
      r(rule("regex", [path(REGEX, "/fo")])),
      http("/foo"),
      404,
    ],
    [
      "a longer RegularExpression beats a shorter one",
      r(rule("short", [path(REGEX, "/.*")]), rule("long", [path(REGEX, "/foo/.*")])),
      http("/foo/x"),
      "long",
    ],
    [
      "a longer path beats a method match",
      r(
        rule("method", [{ ...path(PREFIX, "/"), method: "GET" }]),
        rule("path", [path(PREFIX, "/foo")]),
      ),
      http("/foo"),
      "path",
    ],
    [
      "a method match beats header matches",
      r(
        rule("headers", [{ headers: [header("a", "1"), header("b", "2")] }]),
        rule("method", [{ method: "GET" }]),
      ),
      http("/", { headers: { a: "1", b: "2" } }),
      "method",
    ],
    ["the method must be equal", r(rule("post", [{ method: "POST" }])), http("/"), 404],
    [
      "more header matches win",
      r(
        rule("one", [{ headers: [header("a", "1")] }]),
        rule("two", [{ headers: [header("a", "1"), header("b", "2")] }]),
      ),
      http("/", { headers: { A: "1", B: "2" } }),
      "two",
    ],
    [
      "header matches beat query parameter matches",
      r(
        rule("query", [{ queryParams: [query("q", "1"), query("r", "2")] }]),
        rule("header", [{ headers: [header("a", "1")] }]),
      ),
      http("/?q=1&r=2", { headers: { a: "1" } }),
      "header",
    ],
    [
      "more query parameter matches win",
      r(
        rule("one", [{ queryParams: [query("q", "1")] }]),
        rule("two", [{ queryParams: [query("q", "1"), query("r", "2")] }]),
      ),
      http("/?q=1&r=2"),
      "two",
    ],
    [
      "duplicate header conditions count once and only the first is considered",
      r(
        rule("dup", [{ headers: [header("a", "1"), header("A", "other")] }]),
        rule("two", [{ headers: [header("a", "1"), header("b", "2")] }]),
      ),
      http("/", { headers: { a: "1", b: "2" } }),
      "two",
    ],
    [
      "header names are case-insensitive, values exact",
      r(rule("v", [{ headers: [header("version", "One")] }])),
      http("/", { headers: { VERSION: "one" } }),
      404,
    ],
    [
      "a repeated header is matched joined with commas",
      r(rule("v", [{ headers: [header("x", "1,2")] }])),
      http("/", { headers: { x: ["1", "2"] } }),
      "v",
    ],
    [
      "a header RegularExpression matches the whole value",
      r(rule("v", [{ headers: [header("x", "ab?", StringMatchType.REGULAR_EXPRESSION)] }])),
      http("/", { headers: { x: "abc" } }),
      404,
    ],
    [
      "query parameter names and values are case-sensitive",
      r(rule("whale", [{ queryParams: [query("animal", "whale")] }])),
      http("/?ANIMAL=Whale"),
      404,
    ],
    [
      "a repeated query parameter is matched by its first value",
      r(rule("whale", [{ queryParams: [query("animal", "whale")] }])),
      http("/?animal=whale&animal=dolphin"),
      "whale",
    ],
    [
      "a query RegularExpression",
      r(rule("re", [{ queryParams: [query("n", "[0-9]+", StringMatchType.REGULAR_EXPRESSION)] }])),
      http("/?n=42"),
      "re",
    ],
    [
      "any match of a rule is enough; all conditions of a match must hold",
      r(
        rule("either", [
          { ...path(EXACT, "/a"), method: "POST" },
          { ...path(EXACT, "/b"), headers: [header("x", "1")] },
        ]),
      ),
      http("/b", { headers: { x: "1" } }),
      "either",
    ],
    [
      "a match without a path is PathPrefix /",
      r(rule("m", [{ method: "GET" }])),
      http("/anything/at/all"),
      "m",
    ],
    [
      "a rule without matches matches every request",
      r(rule("all")),
      http("/x?y=z", { method: "DELETE" }),
      "all",
    ],
    [
      "the oldest route wins a tie across routes",
      [
        route("a-new", [rule("new")], { creationTime: { seconds: 200n } }),
        route("z-old", [rule("old")], { creationTime: { seconds: 100n } }),
      ],
      http("/"),
      "old",
    ],
    [
      "a route with a creation time beats one without",
      [
        route("a-none", [rule("none")]),
        route("z-dated", [rule("dated")], { creationTime: { seconds: 1n } }),
      ],
      http("/"),
      "dated",
    ],
    [
      "equal creation times: namespace/name order wins",
      [
        route("b", [rule("b")], { creationTime: { seconds: 100n } }),
        route("a", [rule("other-ns")], { namespace: "zz", creationTime: { seconds: 100n } }),
        route("a", [rule("a")], { creationTime: { seconds: 100n } }),
      ],
      http("/"),
      "a",
    ],
    [
      "within a route, the first matching rule wins a tie",
      r(rule("first", [path(PREFIX, "/")]), rule("second", [path(PREFIX, "/")])),
      http("/"),
      "first",
    ],
    [
      "match precedence beats route age",
      [
        route("old", [rule("old", [path(PREFIX, "/")])], { creationTime: { seconds: 1n } }),
        route("new", [rule("new", [path(PREFIX, "/api")])], { creationTime: { seconds: 9n } }),
      ],
      http("/api/x"),
      "new",
    ],
    ["nothing matches: 404", r(rule("a", [path(EXACT, "/a")])), http("/b"), 404],
  ];
  it.each(cases)("%s", (_name, routes, request, expected) => {
    expect(outcome(run(routes, request))).toBe(expected);
  });

  it("explains which route, rule and match decided", () => {
    const decision = run(
      [
        route("r", [
          rule("x", [path(EXACT, "/x")]),
          rule("y", [path(EXACT, "/nope"), path(PREFIX, "/y")], { name: "the-y-rule" }),
        ]),
      ],
      http("/y/1"),
    );
    expect(decision).toMatchObject({
      outcome: "forwarded",
      status: 200,
      route: {
        kind: "HTTPRoute",
        namespace: "shop",
        name: "r",
        originCluster: "east",
        role: "producer",
      },
      ruleIndex: 1,
      ruleName: "the-y-rule",
      matchIndex: 1,
      matchedCandidates: 1,
      backend: { service: "shop/y", port: 8080, index: 0 },
      forwarded: { path: "/y/1", host: "cart" },
    });
    expect(decision.match?.path?.value).toBe("/y");
    expect(decision.reason).toContain("HTTPRoute shop/r (from east) rule 1 (the-y-rule) match 1");
  });

  it("reports a rule without matches and a 404 in words", () => {
    const all = run([route("r", [rule("all")])], http("/"));
    expect(all.matchIndex).toBeUndefined();
    expect(all.reason).toContain("no matches: matches every request");
    const none = run([route("r", [rule("a", [path(EXACT, "/a")])])], http("/b"));
    expect(none).toMatchObject({
      outcome: "no-route",
      status: 404,
      route: undefined,
      grpcStatus: undefined,
    });
    expect(none.reason).toContain("GET /b");
  });

  it("skips routes of an unspecified kind", () => {
    expect(
      outcome(run([route("r", [rule("a")], { kind: RouteKind.UNSPECIFIED })], http("/"))),
    ).toBe(404);
  });
});

describe("evaluate: hostnames (Gateway evaluation)", () => {
  const routes = [
    route("none", [rule("none", [path(PREFIX, "/")])]),
    route("wild", [rule("wild", [path(PREFIX, "/")])], { hostnames: ["*.example.com"] }),
    route("wild-long", [rule("wild-long", [path(PREFIX, "/")])], {
      hostnames: ["*.foo.example.com"],
    }),
    route("exact", [rule("exact", [path(PREFIX, "/")])], {
      hostnames: ["a.foo.example.com", "other.org"],
    }),
    route("deep", [rule("deep-exact", [path(EXACT, "/deep")])], { hostnames: ["*.deep.com"] }),
  ];
  it.each([
    ["a.foo.example.com", "/", "exact"],
    ["A.FOO.example.com:8080", "/", "exact"],
    ["b.foo.example.com", "/", "wild-long"],
    ["b.example.com", "/", "wild"],
    ["example.com", "/", "none"],
    ["other.org", "/", "exact"],
    ["x.deep.com", "/deep", "deep-exact"],
    ["x.deep.com", "/other", "none"],
  ])("host %s path %s → %s", (host, target, expected) => {
    expect(outcome(run(routes, http(target, { host })))).toBe(expected);
  });

  it("hostname precedence comes before path precedence", () => {
    const decision = run(
      [
        route("host", [rule("host", [path(PREFIX, "/")])], { hostnames: ["a.com"] }),
        route("path", [rule("path", [path(EXACT, "/x")])]),
      ],
      http("/x", { host: "a.com" }),
    );
    expect(outcome(decision)).toBe("host");
    expect(decision.hostname).toBe("a.com");
  });

  it("a route whose hostnames do not match is not a candidate", () => {
    expect(
      outcome(
        run([route("r", [rule("r")], { hostnames: ["a.com"] })], http("/", { host: "b.com" })),
      ),
    ).toBe(404);
  });
});

describe("evaluate: mesh (GAMMA) producer and consumer routes", () => {
  const producer = route("prod", [rule("producer")]);
  const consumer = route("cons", [rule("consumer")], {
    namespace: "web",
    role: RouteRole.CONSUMER,
  });
  const otherServiceConsumer = route("cons-other", [rule("elsewhere")], {
    namespace: "api",
    role: RouteRole.CONSUMER,
    parentRefs: [{ service: "shop/other", port: 0 }],
  });
  const mesh = (callerNamespace: string, port = 80, portName?: string): MeshDestination => ({
    service: SVC,
    port,
    callerNamespace,
    portName,
  });
  const cases: {
    name: string;
    routes: RouteInit[];
    mesh: MeshDestination;
    expected: string | number;
  }[] = [
    {
      name: "a caller in the consumer route's namespace uses it",
      routes: [producer, consumer],
      mesh: mesh("web"),
      expected: "consumer",
    },
    {
      name: "other callers use the producer route",
      routes: [producer, consumer],
      mesh: mesh("shop"),
      expected: "producer",
    },
    {
      name: "a caller in a third namespace uses the producer route",
      routes: [producer, consumer],
      mesh: mesh("batch"),
      expected: "producer",
    },
    {
      name: "a consumer route for another service does not hide the producer routes",
      routes: [producer, otherServiceConsumer],
      mesh: mesh("api"),
      expected: "producer",
    },
    {
      name: "consumer routes replace producer routes even when none of them matches",
      routes: [
        producer,
        route("cons", [rule("consumer", [path(EXACT, "/only")])], {
          namespace: "web",
          role: RouteRole.CONSUMER,
        }),
      ],
      mesh: mesh("web"),
      expected: 404,
    },
    {
      name: "without routes the request goes to the Service itself",
      routes: [],
      mesh: mesh("web"),
      expected: "cart",
    },
    {
      name: "routes attached but none matches: 404",
      routes: [route("r", [rule("a", [path(EXACT, "/a")])])],
      mesh: mesh("web"),
      expected: 404,
    },
    {
      name: "a parentRef port limits the route to that port",
      routes: [route("r", [rule("on-80")], { parentRefs: [{ service: SVC, port: 80 }] })],
      mesh: mesh("shop", 8080),
      expected: "cart",
    },
    {
      name: "a parentRef port applies on that port",
      routes: [route("r", [rule("on-80")], { parentRefs: [{ service: SVC, port: 80 }] })],
      mesh: mesh("shop", 80),
      expected: "on-80",
    },
    {
      name: "a parentRef sectionName must name the dialled port",
      routes: [route("r", [rule("http")], { parentRefs: [{ service: SVC, sectionName: "http" }] })],
      mesh: mesh("shop", 80, "http"),
      expected: "http",
    },
    {
      name: "a parentRef sectionName for another port does not apply",
      routes: [route("r", [rule("http")], { parentRefs: [{ service: SVC, sectionName: "http" }] })],
      mesh: mesh("shop", 8080, "http-alt"),
      expected: "cart",
    },
    {
      name: "a route attached to another service does not apply",
      routes: [route("r", [rule("x")], { parentRefs: [{ service: "shop/other", port: 0 }] })],
      mesh: mesh("shop"),
      expected: "cart",
    },
    {
      name: "route hostnames are ignored in the mesh",
      routes: [route("r", [rule("h")], { hostnames: ["nowhere.example"] })],
      mesh: mesh("shop"),
      expected: "h",
    },
    {
      name: "a route with an unspecified role is ignored",
      routes: [route("r", [rule("x")], { role: RouteRole.UNSPECIFIED })],
      mesh: mesh("shop"),
      expected: "cart",
    },
  ];
  it.each(cases)("$name", ({ routes, mesh: destination, expected }) => {
    expect(outcome(run(routes, http("/"), { mesh: destination }))).toBe(expected);
  });

  it("marks a passthrough and a consumer route in the decision", () => {
    const pass = run([], http("/p"), { mesh: mesh("web") });
    expect(pass).toMatchObject({
      outcome: "passthrough",
      status: 200,
      backend: { service: SVC, port: 80, index: -1 },
      forwarded: { path: "/p", host: "cart" },
    });
    const viaConsumer = run([producer, consumer], http("/"), { mesh: mesh("web") });
    expect(viaConsumer.route).toMatchObject({ namespace: "web", name: "cons", role: "consumer" });
  });

  it("GRPCRoutes on a port hide HTTPRoutes on it (GEP-1294 route types)", () => {
    const grpcRoute = route("g", [rule("grpc")], { kind: RouteKind.GRPC });
    const httpRoute = route("h", [rule("http")]);
    expect(outcome(run([grpcRoute, httpRoute], http("/"), { mesh: mesh("shop") }))).toBe(404);
    const call: EvaluatorRequest = {
      kind: "grpc",
      authority: "cart:80",
      service: "a.B",
      method: "C",
    };
    expect(outcome(run([grpcRoute, httpRoute], call, { mesh: mesh("shop") }))).toBe("grpc");
  });
});

describe("evaluate: backends and weights", () => {
  const split = [
    route("r", [
      {
        backends: [
          { service: "shop/a", port: 1, weight: 70 },
          { service: "shop/zero", port: 1, weight: 0 },
          { service: "shop/b", port: 1, weight: 30 },
        ],
      },
    ]),
  ];
  it.each([
    [0, "a"],
    [0.69, "a"],
    [0.7, "b"],
    [0.999, "b"],
  ])("random %s picks %s", (draw, expected) => {
    expect(outcome(run(split, http("/"), { random: () => draw }))).toBe(expected);
  });

  it("never picks a weight-0 backend and honours the weights over many draws", () => {
    let seed = 12345;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const counts: Record<string, number> = {};
    for (let i = 0; i < 2000; i++) {
      const name = outcome(run(split, http("/"), { random })) as string;
      counts[name] = (counts[name] ?? 0) + 1;
    }
    expect(counts.zero).toBeUndefined();
    expect((counts.a ?? 0) / 2000).toBeCloseTo(0.7, 1);
    expect((counts.b ?? 0) / 2000).toBeCloseTo(0.3, 1);
  });

  it("does not draw for a single backend", () => {
    const random = () => {
      throw new Error("no draw expected");
    };
    expect(outcome(run([route("r", [rule("only")])], http("/"), { random }))).toBe("only");
  });

  const failures: { name: string; rule: RuleInit; reason: string }[] = [
    { name: "no backends", rule: { backends: [] }, reason: "the rule has no backends" },
    {
      name: "all weights 0",
      rule: { backends: [{ service: "shop/a", port: 1, weight: 0 }] },
      reason: "every backend of the rule has weight 0",
    },
    {
      name: "an unresolved backend (empty service)",
      rule: { backends: [{ service: "", port: 0, weight: 1 }] },
      reason: "cannot be resolved",
    },
  ];
  it.each(failures)("$name → 500", ({ rule: r, reason }) => {
    const decision = run([route("r", [r])], http("/"));
    expect(decision).toMatchObject({ outcome: "no-backend", status: 500 });
    expect(decision.reason).toContain(reason);
    expect(decision.forwarded).toBeUndefined();
  });

  it("asks isBackendResolvable and sends that share of the traffic to a 500", () => {
    const routes = [
      route("r", [
        {
          backends: [
            { service: "shop/ok", port: 1, weight: 1 },
            { service: "other/denied", port: 1, weight: 1 },
          ],
        },
      ]),
    ];
    const isBackendResolvable = (b: { service: string }) => !b.service.startsWith("other/");
    expect(outcome(run(routes, http("/"), { random: () => 0.2, isBackendResolvable }))).toBe("ok");
    const denied = run(routes, http("/"), { random: () => 0.7, isBackendResolvable });
    expect(denied).toMatchObject({ status: 500, backend: { service: "other/denied", index: 1 } });
  });
});

describe("evaluate: filters", () => {
  const modifier = (set: [string, string][], add: [string, string][], remove: string[]) => ({
    set: set.map(([name, value]) => ({ name, value })),
    add: add.map(([name, value]) => ({ name, value })),
    remove,
  });

  it("applies request header modifiers: rule filters first, then the backend's", () => {
    const routes = [
      route("r", [
        {
          filters: [
            {
              filter: {
                case: "requestHeaderModifier",
                value: modifier([["X-Set", "rule"]], [["X-Add", "rule"]], ["x-gone"]),
              },
            },
          ],
          backends: [
            {
              service: "shop/a",
              port: 1,
              weight: 1,
              filters: [
                {
                  filter: {
                    case: "requestHeaderModifier",
                    value: modifier([["x-set", "backend"]], [["X-ADD", "backend"]], []),
                  },
                },
              ],
            },
          ],
        },
      ]),
    ];
    const decision = run(
      routes,
      http("/", { headers: { "x-set": "orig", "X-Add": "orig", "X-Gone": "1", Keep: "k" } }),
    );
    expect(decision.requestHeaders).toEqual({
      "x-set": ["backend"],
      "x-add": ["orig", "rule", "backend"],
      keep: ["k"],
    });
    expect(decision.requestHeaderChanges.map((c) => `${c.op} ${c.name}`)).toEqual([
      "set x-set",
      "add x-add",
      "remove x-gone",
      "set x-set",
      "add x-add",
    ]);
  });

  it("lists response header changes in order for the data plane", () => {
    const routes = [
      route("r", [
        rule("a", [], {
          filters: [
            {
              filter: {
                case: "responseHeaderModifier",
                value: modifier([["X-R", "1"]], [], ["server"]),
              },
            },
          ],
        }),
      ]),
    ];
    expect(run(routes, http("/")).responseHeaderChanges).toEqual([
      { op: "set", name: "x-r", value: "1" },
      { op: "remove", name: "server", value: "" },
    ]);
  });

  it("redirects with the spec's defaults and does not forward", () => {
    const routes = [
      route("r", [
        {
          matches: [path(PREFIX, "/old")],
          filters: [
            {
              filter: {
                case: "requestRedirect",
                value: {
                  scheme: "https",
                  path: { type: PathModifierType.REPLACE_PREFIX_MATCH, value: "/new" },
                  statusCode: 301,
                },
              },
            },
          ],
        },
      ]),
    ];
    const decision = run(routes, {
      kind: "http",
      method: "GET",
      host: "shop.example:8080",
      port: 8080,
      path: "/old/page?q=1",
    });
    expect(decision).toMatchObject({
      outcome: "redirected",
      status: 301,
      backend: undefined,
      forwarded: undefined,
      redirect: {
        statusCode: 301,
        scheme: "https",
        hostname: "shop.example",
        port: undefined,
        path: "/new/page",
      },
    });
    expect(decision.redirect?.location).toBe("https://shop.example/new/page?q=1");
  });

  it("uses the listener port in a redirect without scheme or port", () => {
    const routes = [
      route("r", [
        { filters: [{ filter: { case: "requestRedirect", value: { hostname: "x.org" } } }] },
      ]),
    ];
    const decision = run(routes, {
      kind: "http",
      method: "GET",
      host: "a",
      port: 8080,
      path: "/p",
    });
    expect(decision.redirect?.location).toBe("http://x.org:8080/p");
    expect(decision.status).toBe(302);
  });

  it("runs a backend's redirect after choosing it", () => {
    const routes = [
      route("r", [
        {
          matches: [path(PREFIX, "/prefix")],
          backends: [
            {
              service: "shop/a",
              port: 1,
              weight: 1,
              filters: [
                {
                  filter: {
                    case: "requestRedirect",
                    value: {
                      path: { type: PathModifierType.REPLACE_PREFIX_MATCH, value: "/moved" },
                    },
                  },
                },
              ],
            },
          ],
        },
      ]),
    ];
    const decision = run(routes, http("/prefix/x"));
    expect(decision.outcome).toBe("redirected");
    expect(decision.redirect?.location).toBe("http://cart/moved/x");
  });

  it.each([
    [
      { type: PathModifierType.REPLACE_PREFIX_MATCH, value: "/" },
      "/strip/one?x=1",
      "/one?x=1",
      "cart",
    ],
    [{ type: PathModifierType.REPLACE_PREFIX_MATCH, value: "/v2" }, "/strip", "/v2", "cart"],
    [{ type: PathModifierType.REPLACE_FULL_PATH, value: "/full" }, "/strip/a/b", "/full", "cart"],
    [undefined, "/strip/a", "/strip/a", "new.example"],
  ])("URL rewrite %j of %s → %s", (pathModifier, target, rewrittenPath, host) => {
    const routes = [
      route("r", [
        rule("a", [path(PREFIX, "/strip")], {
          filters: [
            {
              filter: {
                case: "urlRewrite",
                value:
                  pathModifier === undefined ? { hostname: "new.example" } : { path: pathModifier },
              },
            },
          ],
        }),
      ]),
    ];
    const decision = run(routes, http(target));
    expect(decision.rewrite).toEqual({ path: rewrittenPath, host });
    expect(decision.forwarded).toEqual({ path: rewrittenPath, host });
  });

  it("mirrors: always without a fraction, by draw with one, never when not forwarded", () => {
    const mirrorRule = (backends: RuleInit["backends"]): RouteInit[] => [
      route("r", [
        {
          filters: [
            {
              filter: {
                case: "requestMirror",
                value: { backend: { service: "shop/m1", port: 8080 } },
              },
            },
            {
              filter: {
                case: "requestMirror",
                value: {
                  backend: { service: "shop/m2", port: 8080 },
                  fraction: { numerator: 20, denominator: 100 },
                },
              },
            },
          ],
          backends,
        },
      ]),
    ];
    const ok = mirrorRule([{ service: "shop/a", port: 1, weight: 1 }]);
    expect(run(ok, http("/"), { random: () => 0.1 }).mirrors).toEqual([
      { service: "shop/m1", port: 8080, percent: 100, mirrored: true },
      { service: "shop/m2", port: 8080, percent: 20, mirrored: true },
    ]);
    expect(run(ok, http("/"), { random: () => 0.5 }).mirrors.map((m) => m.mirrored)).toEqual([
      true,
      false,
    ]);
    expect(run(mirrorRule([]), http("/")).mirrors.map((m) => m.mirrored)).toEqual([false, false]);
  });

  it("reports the rule's timeouts in milliseconds", () => {
    const routes = [
      route("r", [
        rule("a", [], {
          timeouts: { request: { seconds: 2n }, backendRequest: { nanos: 500_000_000 } },
        }),
      ]),
    ];
    expect(run(routes, http("/")).timeouts).toEqual({ requestMs: 2000, backendRequestMs: 500 });
    expect(run([route("r", [rule("a")])], http("/")).timeouts).toBeUndefined();
  });

  it("lists extension filters for the data plane", () => {
    const routes = [
      route("r", [
        rule("a", [], {
          filters: [
            { filter: { case: "extensionRef", value: { group: "x.io", kind: "F", name: "f" } } },
          ],
        }),
      ]),
    ];
    expect(run(routes, http("/")).extensionRefs).toMatchObject([
      { group: "x.io", kind: "F", name: "f" },
    ]);
  });

  describe("CORS", () => {
    const corsRoutes = [
      route("r", [
        rule("a", [], {
          filters: [
            {
              filter: {
                case: "cors",
                value: {
                  allowOrigins: ["https://ok.com"],
                  allowMethods: ["GET"],
                  allowCredentials: true,
                  maxAgeSeconds: 10,
                },
              },
            },
          ],
        }),
      ]),
    ];
    const preflight = (origin: string) =>
      http("/", {
        method: "OPTIONS",
        headers: { Origin: origin, "Access-Control-Request-Method": "GET" },
      });

    it("answers an allowed preflight itself with 204 and the CORS headers", () => {
      const decision = run(corsRoutes, preflight("https://ok.com"));
      expect(decision).toMatchObject({
        outcome: "cors-preflight",
        status: 204,
        forwarded: undefined,
      });
      expect(decision.cors).toMatchObject({
        preflight: true,
        originAllowed: true,
        origin: "https://ok.com",
      });
      expect(decision.responseHeaderChanges.map((c) => c.name)).toEqual([
        "access-control-allow-origin",
        "access-control-allow-methods",
        "access-control-max-age",
        "access-control-allow-credentials",
      ]);
    });

    it("refuses a preflight from another origin with 403 and no CORS headers", () => {
      const decision = run(corsRoutes, preflight("https://evil.com"));
      expect(decision).toMatchObject({
        outcome: "cors-preflight",
        status: 403,
        responseHeaderChanges: [],
      });
    });

    it("forwards an actual request and adds Allow-Origin for an allowed origin only", () => {
      const allowed = run(corsRoutes, http("/", { headers: { Origin: "https://ok.com" } }));
      expect(allowed.outcome).toBe("forwarded");
      expect(allowed.responseHeaderChanges).toContainEqual({
        op: "set",
        name: "access-control-allow-origin",
        value: "https://ok.com",
      });
      const other = run(corsRoutes, http("/", { headers: { Origin: "https://evil.com" } }));
      expect(other).toMatchObject({ outcome: "forwarded", responseHeaderChanges: [] });
    });
  });
});

describe("evaluate: GRPCRoute", () => {
  const SERVICE = "pkg.Echo";
  const grpcRoute = (name: string, rules: RuleInit[], extra: RouteExtra = {}) =>
    route(name, rules, { kind: RouteKind.GRPC, ...extra });
  const method = (service: string, name: string, type = StringMatchType.EXACT) => ({
    grpcMethod: { type, service, method: name },
  });
  const call = (
    name: string,
    metadata?: Record<string, string>,
    authority = "cart",
  ): EvaluatorRequest => ({
    kind: "grpc",
    authority,
    service: SERVICE,
    method: name,
    metadata,
  });
  const g = (...rules: RuleInit[]) => [grpcRoute("g", rules)];
  const echo = (backend: string, service = SERVICE, name = "Echo") =>
    rule(backend, [method(service, name)]);
  const withHeaders = (backend: string, ...names: string[]) =>
    rule(backend, [{ ...method(SERVICE, "Echo"), headers: names.map((n) => header(n, "1")) }]);
  const cases: [
    name: string,
    routes: RouteInit[],
    request: EvaluatorRequest,
    expected: string | number,
  ][] = [
    [
      "an exact service and method",
      g(echo("echo"), echo("two", SERVICE, "EchoTwo")),
      call("EchoTwo"),
      "two",
    ],
    ["no method matches: 404 (Unimplemented)", g(echo("echo")), call("EchoThree"), 404],
    [
      "service and method beat service only",
      g(echo("svc", SERVICE, ""), echo("both")),
      call("Echo"),
      "both",
    ],
    [
      "more service characters beat more method characters",
      g(echo("method-only", "", "EchoVeryLongName"), echo("svc", SERVICE, "")),
      call("EchoVeryLongName"),
      "svc",
    ],
    [
      "a method beats header matches",
      g(rule("headers", [{ headers: [header("a", "1"), header("b", "1")] }]), echo("m", "")),
      call("Echo", { a: "1", b: "1" }),
      "m",
    ],
    [
      "more header matches win",
      g(withHeaders("one", "a"), withHeaders("two", "a", "b")),
      call("Echo", { A: "1", B: "1" }),
      "two",
    ],
    [
      "a regular expression method match",
      g(rule("re", [method("pkg\\..*", "Echo.*", StringMatchType.REGULAR_EXPRESSION)])),
      call("EchoTwo"),
      "re",
    ],
    ["a rule without matches matches every call", g(rule("all")), call("Anything"), "all"],
    [
      "hostname precedence: an exact hostname beats a wildcard",
      [
        grpcRoute("a", [echo("wild")], { hostnames: ["*.bar.com"] }),
        grpcRoute("b", [rule("exact")], { hostnames: ["foo.bar.com"] }),
      ],
      call("Echo", undefined, "foo.bar.com"),
      "exact",
    ],
    [
      "without GRPCRoutes, an HTTPRoute sees POST /service/method",
      [route("h", [rule("http", [{ ...path(EXACT, `/${SERVICE}/Echo`), method: "POST" }])])],
      call("Echo"),
      "http",
    ],
    [
      "with GRPCRoutes, HTTPRoutes are not used for gRPC calls",
      [grpcRoute("g", [echo("grpc", SERVICE, "Other")]), route("h", [rule("http")])],
      call("Echo"),
      404,
    ],
    [
      "an HTTP request does not use GRPCRoutes",
      [grpcRoute("g", [rule("grpc")]), route("h", [rule("http")])],
      http("/"),
      "http",
    ],
  ];
  it.each(cases)("%s", (_name, routes, request, expected) => {
    expect(outcome(run(routes, request))).toBe(expected);
  });

  it("maps the status to a gRPC status and applies metadata modifiers", () => {
    const routes = [
      grpcRoute("g", [
        rule("echo", [method(SERVICE, "Echo")], {
          filters: [
            {
              filter: {
                case: "requestHeaderModifier",
                value: { set: [{ name: "X-Set", value: "v" }], add: [], remove: [] },
              },
            },
          ],
        }),
      ]),
    ];
    const ok = run(routes, call("Echo", { "x-set": "old" }));
    expect(ok).toMatchObject({ grpcStatus: "OK", route: { kind: "GRPCRoute" } });
    expect(ok.requestHeaders["x-set"]).toEqual(["v"]);
    expect(run(routes, call("Nope")).grpcStatus).toBe("Unimplemented");
  });
});

describe("evaluate: several projections", () => {
  it("names the origin cluster of the projection the winning route came from", () => {
    const decision = evaluate({
      projections: [
        projection([route("west-route", [rule("west", [path(PREFIX, "/")])])], "west"),
        projection([route("east-route", [rule("east", [path(PREFIX, "/api")])])], "east"),
      ],
      request: http("/api"),
    });
    expect(decision.route).toMatchObject({
      name: "east-route",
      originCluster: "east",
      projectionService: SVC,
    });
  });

  it("is deterministic: the same input gives the same decision", () => {
    const input: EvaluateInput = {
      projections: [projection([route("r", [rule("a", [path(PREFIX, "/")])])])],
      request: http("/x"),
      random: () => 0.3,
    };
    expect(evaluate(input)).toEqual(evaluate(input));
  });
});
