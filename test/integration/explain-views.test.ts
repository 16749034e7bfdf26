/**
 * Issue 4's last check: `aetherctl explain` decides a request the same way in
 * the hub's view (its registrar) and in a spoke agent's view (its /routes),
 * with real processes: etcd, a hub registrar exporting a copy of
 * examples/mesh, a spoke registrar trusting only the hub, and two agents of
 * the spoke (one without local routes, one with examples/local/west). The
 * west agent's local override of shop/checkout decides differently, and says
 * so. The comparisons run aetherctl's command line in-process; the
 * human-readable checks run it as an OS process.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRegistrarClient } from "../../clients/aetherctl/registrar-client.js";
import { ConfigView } from "../../gen/aether/registry/v1/config_service_pb.js";
import { runAetherctlInProcess } from "../support/aetherctl-in-process.js";
import {
  type AgentProcess,
  startAgentProcess,
  startSpokeRegistrar,
  stopAllAgents,
} from "../support/agent-process.js";
import { type EtcdHandle, startEtcd } from "../support/etcd.js";
import { startExportRegistrar } from "../support/export-store.js";
import { mainEntry } from "../support/process-entry.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const ROOT = resolve(import.meta.dirname, "../..");
const MAIN = resolve(ROOT, "clients/aetherctl/main.ts");
const WEST = resolve(ROOT, "examples/local/west");
const PREFIX = "/aether-explain-views";
const DEPS = "shop/checkout,shop/cart,payments/ledger";

/** aetherctl processes not yet exited, killed in afterAll whatever happened. */
const children = new Set<ChildProcess>();

interface Result {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs aetherctl's command line in this process (`runAetherctl`, what
 * `main.ts` runs): the comparisons make many calls, and a process each
 * would cost a second.
 */
function aetherctlInProcess(args: readonly string[]): Promise<Result> {
  return runAetherctlInProcess(args);
}

/** Runs aetherctl as an OS process to completion and resolves with its exit code and output. */
async function aetherctl(args: readonly string[]): Promise<Result> {
  const child = spawn(process.execPath, [...mainEntry(MAIN), ...args], {
    cwd: ROOT,
    env: { ...process.env, AETHER_REGISTRAR: undefined, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const [code] = (await once(child, "close")) as [number | null];
  children.delete(child);
  return { code, stdout, stderr };
}

type Json = Record<string, unknown>;

/** Runs `aetherctl explain -o json` (with `view`'s flag) and resolves with the parsed output. */
async function explainJson(view: string[], request: readonly string[]): Promise<Json> {
  const result = await aetherctlInProcess([...view, "-o", "json", "explain", ...request]);
  expect(result, `aetherctl ${[...view, "explain", ...request].join(" ")}`).toMatchObject({
    code: 0,
    stderr: "",
  });
  return JSON.parse(result.stdout) as Json;
}

/** The requests of the comparison, over examples/mesh. */
const REQUESTS: { name: string; args: string[]; expect: Json }[] = [
  {
    name: "weighted split, low random: v1",
    args: ["--from-namespace", "shop", "--random", "0.1", "GET", "http://checkout.shop:8080/"],
    expect: {
      outcome: "forwarded",
      ruleName: "canary",
      backend: { service: "shop/checkout-v1" },
      retry: { codes: [502, 503, 504], attempts: 2, backoffMs: 100 },
      httpFilters: [
        {
          namespace: "shop",
          name: "checkout-headers",
          phase: "HTTP_FILTER_PHASE_DEFAULT",
          priority: 10,
          targets: [{ service: "shop/checkout", port: 8080, sectionName: "http" }],
          headerMutation: { response: { set: [{ name: "x-checkout-filter", value: "aether" }] } },
        },
      ],
    },
  },
  {
    name: "weighted split, high random: v2",
    args: ["--from-namespace", "shop", "--random", "0.95", "GET", "http://checkout.shop:8080/"],
    expect: { outcome: "forwarded", ruleName: "canary", backend: { service: "shop/checkout-v2" } },
  },
  {
    name: "header match: beta testers",
    args: [
      "--from-namespace",
      "shop",
      "-H",
      "x-beta: true",
      "GET",
      "http://checkout.shop:8080/cart/items",
    ],
    expect: { ruleName: "beta-testers", backend: { service: "shop/checkout-v2" } },
  },
  {
    name: "path and method match: ledger balance",
    args: ["--from-namespace", "shop", "GET", "http://ledger.payments:8080/balance"],
    expect: { outcome: "forwarded", route: { name: "ledger-http" } },
  },
  {
    name: "redirect: old basket",
    args: ["--from-namespace", "shop", "GET", "http://cart.shop:8080/basket/items?x=1"],
    expect: { status: 301, ruleName: "old-basket" },
  },
  {
    name: "rewrite: cart API v2",
    args: ["--from-namespace", "shop", "POST", "http://cart.shop:8080/api/v2/items"],
    expect: { ruleName: "api-v2", backend: { service: "shop/cart-v2" } },
  },
  {
    name: "consumer route from namespace web",
    args: ["--from-namespace", "web", "--random", "0.95", "GET", "http://checkout.shop:8080/"],
    expect: { route: { namespace: "web", name: "checkout-from-web", role: "consumer" } },
  },
  {
    name: "gRPC call of the EU shard",
    args: [
      "--from-namespace",
      "shop",
      "--grpc",
      "payments.v1.Ledger/GetBalance",
      "-H",
      "x-ledger-shard: eu",
      "http://ledger.payments:9090",
    ],
    expect: { ruleName: "eu-shard", backend: { service: "payments/ledger-eu" } },
  },
  {
    name: "a VirtualHost name of cart (examples/mesh/shop/cart-names.yaml): cart's routes",
    args: ["--from-namespace", "web", "GET", "http://eu.cart.shop.example:8080/basket/items"],
    expect: {
      status: 301,
      ruleName: "old-basket",
      virtualHost: { hostname: "*.cart.shop.example", virtualHost: "shop/cart-names" },
    },
  },
];

let etcd: EtcdHandle | undefined;
let meshDir: string | undefined;
let hub: RegistrarProcess;
let agent: AgentProcess;
let westAgent: AgentProcess;

beforeAll(async () => {
  meshDir = await mkdtemp(join(tmpdir(), "aether-mesh-"));
  await cp(resolve(ROOT, "examples/mesh"), meshDir, { recursive: true });
  etcd = await startEtcd();
  const endpoint = etcd.endpoint;
  let spoke: RegistrarProcess;
  [hub, spoke] = await Promise.all([
    startExportRegistrar({
      endpoint,
      prefix: PREFIX,
      dir: meshDir,
      extra: ["--control-cluster", "hub"],
    }),
    startSpokeRegistrar({ endpoint, prefix: PREFIX, extra: ["--control-cluster", "hub"] }),
  ]);
  const agentArgs = ["--registrar", spoke.url, "--control-cluster", "hub", "--deps", DEPS];
  [agent, westAgent] = await Promise.all([
    startAgentProcess([...agentArgs, "--cluster", "spoke"]),
    startAgentProcess([...agentArgs, "--cluster", "west", "--local-source", `dir:${WEST}`]),
  ]);
  // Both views hold the hub's exports before anything is compared.
  const hubClient = createRegistrarClient(hub.url);
  await waitFor(
    async () => {
      const listing = await hubClient.listAllConfig({ view: ConfigView.EFFECTIVE, pageSize: 100 });
      return ["shop/checkout", "shop/cart", "payments/ledger"].every((s) =>
        listing.projections.some((p) => p.service === s && p.originCluster === "hub"),
      );
    },
    15_000,
    "the hub registrar's effective view of the exports",
    50,
  );
  await waitFor(
    async () =>
      (await agent.routes()).map((e) => `${e.service} ${e.source} ${e.origin}`).join() ===
      "payments/ledger imported hub,shop/cart imported hub,shop/checkout imported hub",
    15_000,
    "the spoke agent's route table",
    50,
  );
  await waitFor(
    async () =>
      (await westAgent.routes()).map((e) => `${e.service} ${e.source} ${e.origin}`).join() ===
      "payments/ledger imported hub,shop/cart imported hub,shop/checkout local west",
    15_000,
    "the west agent's route table",
    50,
  );
}, 40_000);

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await stopAllAgents();
  await stopAllRegistrars();
  await etcd?.stop();
  if (meshDir !== undefined) await rm(meshDir, { recursive: true, force: true });
});

describe("aetherctl explain: the hub's view and the spoke agent's view", () => {
  it("gives the same decision for every request of the table, decided by the hub's config", async () => {
    const views = await Promise.all(
      REQUESTS.map(async (request) => {
        const [inHub, inAgent] = await Promise.all([
          explainJson(["--registrar", hub.url], request.args),
          explainJson([], ["--agent", agent.url, ...request.args]),
        ]);
        return { request, inHub, inAgent };
      }),
    );
    for (const { request, inHub, inAgent } of views) {
      const { agentRoute, ...decision } = inAgent;
      expect(inHub, request.name).not.toHaveProperty("agentRoute");
      expect(decision, request.name).toEqual(inHub);
      expect(inHub, request.name).toMatchObject(request.expect);
      expect((inHub.route as Json).originCluster, request.name).toBe("hub");
      expect(agentRoute, request.name).toMatchObject({
        agent: agent.url,
        routed: true,
        source: "imported",
        origin: "hub",
      });
    }
    // The rewrite and the redirect really are there (not two equal passthroughs).
    const rewrite = views.find((v) => v.request.name.startsWith("rewrite"))?.inHub;
    expect(rewrite?.rewrite).toMatchObject({ path: "/v2/items" });
    const redirect = views.find((v) => v.request.name.startsWith("redirect"))?.inHub;
    expect(redirect?.redirect).toMatchObject({
      location: expect.stringMatching(/\/cart\/items\?x=1$/),
    });
  });

  it("the west agent's local override of shop/checkout decides differently and says it is local", async () => {
    const request = [
      "--from-namespace",
      "shop",
      "--random",
      "0.95",
      "GET",
      "http://checkout.shop:8080/",
    ];
    const [inHub, inWest, westTable, cartInHub, cartInWest] = await Promise.all([
      explainJson(["--registrar", hub.url], request),
      explainJson([], ["--agent", westAgent.url, ...request]),
      aetherctl(["explain", "--agent", westAgent.url, ...request]),
      explainJson(["--registrar", hub.url], REQUESTS[5]?.args ?? []),
      explainJson([], ["--agent", westAgent.url, ...(REQUESTS[5]?.args ?? [])]),
    ]);
    expect(inHub).toMatchObject({
      backend: { service: "shop/checkout-v2" },
      route: { originCluster: "hub" },
    });
    expect(inWest).toMatchObject({
      outcome: "forwarded",
      route: { name: "checkout-west-no-canary", originCluster: "west" },
      backend: { service: "shop/checkout-v1" },
      agentRoute: { source: "local", origin: "west", routed: true },
    });
    expect((inWest.agentRoute as Json).version).toMatch(/^sha256:/);
    expect(westTable.code).toBe(0);
    expect(westTable.stdout).toMatch(/^source: +local, from cluster west /m);
    expect(westTable.stdout).toContain("x-routed-by: west-local");
    // A service west does not override still decides as in the hub.
    const { agentRoute, ...cartDecision } = cartInWest;
    expect(cartDecision).toEqual(cartInHub);
    expect(agentRoute).toMatchObject({ source: "imported", origin: "hub" });
  });

  it("passes through a service the agent does not route (not in its dependency set), exit 0", async () => {
    const args = ["--from-namespace", "shop", "GET", "http://users.identity:8080/users/7"];
    const [inHub, inAgent, table] = await Promise.all([
      explainJson(["--registrar", hub.url], args),
      explainJson([], ["--agent", agent.url, ...args]),
      aetherctl(["explain", "--agent", agent.url, ...args]),
    ]);
    expect(inHub).toMatchObject({ route: { name: "users" } });
    // The backend (users itself) has a BackendTLSPolicy in the example: the hub's view shows it.
    expect(inHub.backendTls).toMatchObject({
      hostname: "users.identity.example",
      caCertificatesPem: expect.stringContaining("-----BEGIN CERTIFICATE-----"),
      subjectAltNames: [{ uri: "spiffe://hub.mesh/ns/identity/sa/users" }],
      policyNamespace: "identity",
      policyName: "users-tls",
    });
    expect(inAgent).toMatchObject({
      outcome: "passthrough",
      route: null,
      agentRoute: { routed: false, source: null },
    });
    expect(table).toMatchObject({ code: 0, stderr: "" });
    expect(table.stdout).toContain(`the agent at ${agent.url} does not route identity/users`);
  });
});
