import { createServer, type Server } from "node:http";
import { create } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it } from "vitest";
import { COMMAND_USAGE, parseAetherctlFlags } from "../../clients/aetherctl/aetherctl-flags.js";
import {
  agentRouteJson,
  fetchAgentRoutes,
  notRoutedSentence,
} from "../../clients/aetherctl/agent-routes.js";
import { formatExplanation } from "../../clients/aetherctl/explain-format.js";
import { constantRandom } from "../../clients/aetherctl/random-source.js";
import {
  RouteKind,
  RouteRole,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import {
  type AgentRouteEntry,
  describeRouteSource,
  findAgentRoute,
  parseAgentRoutes,
} from "../../services/common/agent-route-parse.js";
import { evaluate } from "../../services/common/evaluator.js";
import { mergeRouteTable, routeTableToJson } from "../../services/common/route-merge.js";
import { runAetherctlInProcess } from "../support/aetherctl-in-process.js";
import { explainTargetFromWeb } from "../support/explain-target.js";

const VERSION = "2026-11-29T12:00:00.000000000Z";

function checkout(origin: string, version: string, backend: string): ServiceConfigProjection {
  return create(ServiceConfigProjectionSchema, {
    service: "shop/checkout",
    originCluster: origin,
    version,
    routes: [
      {
        kind: RouteKind.HTTP,
        namespace: "shop",
        name: "checkout",
        role: RouteRole.PRODUCER,
        parentRefs: [{ service: "shop/checkout", port: 8080 }],
        rules: [{ backends: [{ service: backend, port: 8080, weight: 1 }] }],
      },
    ],
  });
}

const hubCheckout = checkout("hub", VERSION, "shop/checkout-v2");
const cart = create(ServiceConfigProjectionSchema, {
  ...checkout("hub", VERSION, "shop/cart"),
  service: "shop/cart",
});

/** The agent's /routes text: checkout local (cluster west), cart imported from hub. */
const ROUTES = routeTableToJson(
  mergeRouteTable({
    dependencies: ["shop/checkout", "shop/cart", "payments/ledger"],
    local: new Map([["shop/checkout", checkout("", "", "shop/checkout-v1")]]),
    imported: new Map([
      ["shop/checkout", { service: "shop/checkout", origin: "hub", projection: hubCheckout }],
      ["shop/cart", { service: "shop/cart", origin: "hub", projection: cart }],
    ]),
    cluster: "west",
  }),
);

describe("parseAgentRoutes", () => {
  it("reads the agent's /routes document back into entries with decoded projections", () => {
    const entries = parseAgentRoutes(ROUTES);
    expect(entries.map((e) => `${e.service} ${e.source} ${e.origin}`)).toEqual([
      "shop/cart imported hub",
      "shop/checkout local west",
    ]);
    const local = findAgentRoute(entries, "shop/checkout") as AgentRouteEntry;
    expect(local.version).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(local.projection.originCluster).toBe("west");
    expect(local.projection.routes[0]?.rules[0]?.backends[0]?.service).toBe("shop/checkout-v1");
    expect(findAgentRoute(entries, "shop/cart")?.projection).toEqual(cart);
    expect(findAgentRoute(entries, "payments/ledger")).toBeUndefined();
  });

  it.each([
    { text: "nope", problem: /^not JSON: / },
    { text: "[]", problem: 'not a route table: no "services" array' },
    { text: '{"services": [1]}', problem: "services[0] is not an object" },
    {
      text: '{"services": [{"service": "a/b", "source": "x", "origin": "o", "version": "v", "projection": {}}]}',
      problem: 'services[0].source is "x", not "local" or "imported"',
    },
    {
      text: '{"services": [{"service": "a/b", "source": "local", "origin": 1, "version": "v", "projection": {}}]}',
      problem: "services[0].origin is not a string",
    },
    {
      text: '{"services": [{"service": "a/b", "source": "local", "origin": "o", "version": "v", "projection": {"nope": 1}}]}',
      problem: /^services\[0\]\.projection: /,
    },
  ])("rejects $text", ({ text, problem }) => {
    expect(() => parseAgentRoutes(text)).toThrow(problem);
  });
});

describe("describing the source", () => {
  const entries = parseAgentRoutes(ROUTES);
  const local = findAgentRoute(entries, "shop/checkout") as AgentRouteEntry;
  const imported = findAgentRoute(entries, "shop/cart") as AgentRouteEntry;

  it("names local routes' cluster and imported config's origin and version", () => {
    expect(describeRouteSource(local)).toBe(`local, from cluster west (version ${local.version})`);
    expect(describeRouteSource(imported)).toBe(`imported, from origin hub version ${VERSION}`);
  });

  it("gives -o json's agentRoute field, all null when the agent does not route the service", () => {
    expect(agentRouteJson({ url: "http://a:1", entry: imported })).toEqual({
      agent: "http://a:1",
      routed: true,
      source: "imported",
      origin: "hub",
      version: VERSION,
    });
    expect(agentRouteJson({ url: "http://a:1", entry: undefined })).toEqual({
      agent: "http://a:1",
      routed: false,
      source: null,
      origin: null,
      version: null,
    });
  });

  function explainLines(entry: AgentRouteEntry | undefined): string[] {
    const target = explainTargetFromWeb(["GET", "http://checkout.shop:8080/"]);
    const random = constantRandom(0);
    const projection = entry?.projection;
    const decision = evaluate({
      projections: projection === undefined ? [] : [projection],
      request: target.request,
      mesh: { service: target.service, port: target.port, callerNamespace: target.callerNamespace },
      random: random.next,
    });
    return formatExplanation({
      target,
      projection,
      view: "agent http://a:1",
      decision,
      random: random.description,
      agent: { url: "http://a:1", entry },
    }).split("\n");
  }

  it("prints the source line under decided by", () => {
    const lines = explainLines(local);
    expect(lines).toContain(
      `decided by:  origin west, version ${local.version} (agent http://a:1)`,
    );
    expect(lines).toContain(`source:      local, from cluster west (version ${local.version})`);
    expect(lines).toContain(
      "backend:     shop/checkout-v1:8080 (backend 0, weight 1, 100% of the rule's traffic)",
    );
  });

  it("says the agent does not route a service it has no entry for, and passes it through", () => {
    const lines = explainLines(undefined);
    expect(lines).toContain(`decided by:  ${notRoutedSentence("http://a:1", "shop/checkout")}`);
    expect(lines.some((l) => l.startsWith("source:"))).toBe(false);
    expect(lines).toContain("backend:     shop/checkout:8080 (the service itself)");
  });
});

describe("--agent on the command line", () => {
  it.each([
    {
      argv: ["explain", "--agent", "ftp://x", "--from-namespace", "web", "GET", "http://a.b/"],
      problem: '--agent "ftp://x" is not an http(s) URL (for example http://127.0.0.1:8081)',
    },
    {
      argv: [
        "explain",
        "--agent",
        "http://x",
        "--origin",
        "hub",
        "--from-namespace",
        "web",
        "GET",
        "http://a.b/",
      ],
      problem:
        "use either --origin or --agent, not both (an agent holds one projection per service)",
    },
  ])("rejects $argv", ({ argv, problem }) => {
    expect(() => parseAetherctlFlags(argv)).toThrow(problem);
  });

  it("is documented in explain's usage", () => {
    expect(COMMAND_USAGE.explain).toContain("--agent URL");
  });
});

describe("fetchAgentRoutes and explain --agent", () => {
  let server: Server | undefined;
  afterEach(async () => {
    const s = server;
    server = undefined;
    if (s !== undefined) await new Promise<void>((done) => s.close(() => done()));
  });

  async function serve(status: number, body: string): Promise<string> {
    server = createServer((_request, response) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(body);
    });
    const s = server;
    await new Promise<void>((done) => s.listen(0, "127.0.0.1", done));
    return `http://127.0.0.1:${(s.address() as { port: number }).port}`;
  }

  const run = runAetherctlInProcess;

  it("fetches and parses /routes", async () => {
    const url = await serve(200, ROUTES);
    const signal = new AbortController().signal;
    expect(await fetchAgentRoutes(url, { timeoutMs: 5_000, signal })).toEqual(
      parseAgentRoutes(ROUTES),
    );
  });

  it("explains with the agent's entry, and adds agentRoute to -o json", async () => {
    const url = await serve(200, ROUTES);
    const args = ["explain", "--agent", url, "--from-namespace", "web", "GET"];
    const table = await run([...args, "http://checkout.shop:8080/"]);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain("source:      local, from cluster west");
    const json = await run(["-o", "json", ...args, "http://users.identity:8080/"]);
    expect(json.code).toBe(0);
    const decision = JSON.parse(json.stdout) as Record<string, unknown>;
    expect(decision.agentRoute).toEqual({
      agent: url,
      routed: false,
      source: null,
      origin: null,
      version: null,
    });
    expect(decision.outcome).toBe("passthrough");
    expect(decision.route).toBeNull();
  });

  it.each([
    {
      status: 503,
      body: "no route table yet\n",
      want: "unavailable: the agent at URL answered GET /routes with HTTP 503: no route table yet",
    },
    {
      status: 200,
      body: "[]",
      want: 'internal: URL/routes is not an agent\'s route table: not a route table: no "services" array',
    },
  ])("exits 1 when the agent answers $status $body", async ({ status, body, want }) => {
    const url = await serve(status, body);
    const result = await run([
      "explain",
      "--agent",
      url,
      "--from-namespace",
      "web",
      "GET",
      "http://a.b/",
    ]);
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr: `aetherctl: ${want.replaceAll("URL", url)}\n`,
    });
  });

  it("exits 1 with a clear message when nothing listens at the agent URL", async () => {
    const url = await serve(200, ROUTES);
    await new Promise<void>((done) => server?.close(() => done()));
    server = undefined;
    const result = await run([
      "explain",
      "--agent",
      url,
      "--from-namespace",
      "web",
      "GET",
      "http://a.b/",
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        `^aetherctl: unavailable: cannot reach the agent at ${url} \\(connect ECONNREFUSED .*\\); is it running\\? \\(check --agent URL\\)\\n$`,
      ),
    );
  });
});
