/**
 * e2e 1: a class-1 route authored on the hub (a copy of examples/mesh,
 * exported with --export-source dir:) reaches the agent of spoke B through
 * B's own registrar, every process separate, over one real etcd; the agent
 * decides a table of requests exactly as a caller in the hub's view does.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentProcess, startAgentProcess, stopAllAgents } from "../support/agent-process.js";
import {
  agentProjection,
  decide,
  EXAMPLES,
  effectiveProjection,
  http,
  type MeshCase,
  startClusterRegistrar,
  type TempCopy,
  tempCopy,
} from "../support/e2e-cluster.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { setCanaryWeights } from "../support/export-store.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("e2e1-");
const DEPS = ["shop/checkout", "shop/cart", "payments/ledger", "identity/users"];

let mesh: TempCopy | undefined;
let hub: RegistrarProcess;
let agentB: AgentProcess;

beforeAll(async () => {
  const prefix = shared.freshPrefix();
  mesh = await tempCopy(join(EXAMPLES, "mesh"));
  let spokeB: RegistrarProcess;
  [hub, spokeB] = await Promise.all([
    startClusterRegistrar({
      endpoint: shared.etcd.endpoint,
      prefix,
      cluster: "hub",
      controlCluster: "hub",
      exportDir: mesh.path,
    }),
    startClusterRegistrar({
      endpoint: shared.etcd.endpoint,
      prefix,
      cluster: "east",
      controlCluster: "hub",
    }),
  ]);
  agentB = await startAgentProcess([
    "--registrar",
    spokeB.url,
    "--cluster",
    "east",
    "--control-cluster",
    "hub",
    "--deps",
    DEPS.join(","),
  ]);
  await agentB.waitUntilReady();
  await waitFor(
    async () => (await agentB.routes()).length === DEPS.length,
    15_000,
    "spoke B's agent to hold the hub's four exported services",
  );
}, 60_000);
afterAll(async () => {
  await stopAllAgents();
  await stopAllRegistrars();
  await mesh?.remove();
});

const TABLE: MeshCase[] = [
  {
    name: "beta tester on /cart goes to checkout-v2",
    service: "shop/checkout",
    request: http("GET", "checkout.shop", "/cart", { "x-beta": "true" }),
  },
  {
    name: "canary draw 0 goes to checkout-v1",
    service: "shop/checkout",
    request: http("GET", "checkout.shop", "/orders"),
  },
  {
    name: "canary draw 0.95 goes to checkout-v2",
    service: "shop/checkout",
    request: http("POST", "checkout.shop", "/orders"),
    random: 0.95,
  },
  {
    name: "consumer route for callers in web",
    service: "shop/checkout",
    callerNamespace: "web",
    request: http("GET", "checkout.shop", "/orders"),
  },
  {
    name: "cart /basket is redirected",
    service: "shop/cart",
    request: http("GET", "cart.shop", "/basket"),
  },
  {
    name: "cart /api/v2 is rewritten",
    service: "shop/cart",
    request: http("GET", "cart.shop", "/api/v2/items"),
  },
  {
    name: "ledger GET /balance",
    service: "payments/ledger",
    request: http("GET", "ledger.payments", "/balance"),
  },
  {
    name: "users regex path match",
    service: "identity/users",
    request: http("GET", "users.identity", "/users/42"),
  },
  {
    name: "users non-numeric id falls through",
    service: "identity/users",
    request: http("GET", "users.identity", "/users/abc"),
  },
];

describe("e2e 1: class-1 propagation hub -> spoke B's agent", () => {
  it("spoke B's agent applies the hub's exported routes and decides every request of the table as the hub's view does (shared evaluator)", async () => {
    for (const c of TABLE) {
      const [atHub, atAgent] = await Promise.all([
        effectiveProjection(hub.url, c.service),
        agentProjection(agentB, c.service),
      ]);
      expect(atHub?.originCluster, c.name).toBe("hub");
      expect(atAgent?.version, c.name).toBe(atHub?.version);
      const hubDecision = decide(atHub, c);
      expect(decide(atAgent, c), c.name).toEqual(hubDecision);
      expect(hubDecision.route, `${c.name}: a hub-authored route matched`).toBeDefined();
    }
    // The table is not vacuous: the decisions differ the way examples/mesh says.
    const backend = async (i: number) =>
      decide(await agentProjection(agentB, (TABLE[i] as MeshCase).service), TABLE[i] as MeshCase)
        .backend?.service;
    expect(await backend(0)).toBe("shop/checkout-v2");
    expect(await backend(1)).toBe("shop/checkout-v1");
    expect(await backend(2)).toBe("shop/checkout-v2");
    const redirect = decide(
      await agentProjection(agentB, "shop/cart"),
      TABLE[4] as MeshCase,
    ).redirect;
    expect(redirect).toBeDefined();
  });

  it("a hub edit (canary 90/10 -> 50/50) reaches spoke B's agent and both sides then agree on the new split", async () => {
    const draw: MeshCase = {
      name: "canary draw 0.6",
      service: "shop/checkout",
      request: http("GET", "checkout.shop", "/orders"),
      random: 0.6,
    };
    const before = await agentProjection(agentB, "shop/checkout");
    expect(decide(before, draw).backend?.service).toBe("shop/checkout-v1");
    await setCanaryWeights((mesh as TempCopy).path, 50, 50);
    await waitFor(
      async () =>
        decide(await agentProjection(agentB, "shop/checkout"), draw).backend?.service ===
        "shop/checkout-v2",
      10_000,
      "the 50/50 split at spoke B's agent",
    );
    const [atHub, atAgent] = await Promise.all([
      effectiveProjection(hub.url, "shop/checkout"),
      agentProjection(agentB, "shop/checkout"),
    ]);
    expect(atAgent?.version).toBe(atHub?.version);
    expect(atAgent?.version).not.toBe(before?.version);
    expect(decide(atAgent, draw)).toEqual(decide(atHub, draw));
  });
});
