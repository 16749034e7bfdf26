/**
 * e2e 1: a class-1 route authored on the hub (a copy of examples/mesh,
 * exported with --export-source dir:) reaches the agent of spoke B through
 * B's own registrar, every process separate, over one real etcd; the agent
 * decides a table of requests exactly as a caller in the hub's view does,
 * follows an edit, and resumes its watch when B's registrar restarts. The
 * whole scenario runs twice: plaintext, and mutual TLS with a CA per
 * cluster (where B's registrar also refuses plaintext and another cluster's
 * agent SVID, naming its SPIFFE ID).
 */
import { join } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigService } from "../../gen/aether/registry/v1/config_service_pb.js";
import { MESH_RECORD } from "../../services/common/service-name.js";
import { type AgentProcess, startAgentProcess, stopAllAgents } from "../support/agent-process.js";
import {
  agentProjection,
  type ClusterRegistrar,
  configClient,
  decide,
  EXAMPLES,
  editCanaryOnHub,
  effectiveProjection,
  http,
  type MeshCase,
  startClusterRegistrar,
  type TempCopy,
  tempCopy,
} from "../support/e2e-cluster.js";
import { agentIdOf, clientTlsOptions, type MeshPki } from "../support/e2e-mesh-pki.js";
import { E2E_TRANSPORTS, useTransport } from "../support/e2e-transports.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { setCanaryWeights } from "../support/export-store.js";
import { stopAllRegistrars } from "../support/registrar-process.js";
import { scrapeMetric } from "../support/scrape-metric.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("e2e1-");
const DEPS = ["shop/checkout", "shop/cart", "payments/ledger", "identity/users"];
const RECONNECTS = "aether_config_stream_reconnects_total";
const REFUSED_BY_REGISTRAR =
  'aether_config_agent_registrar_trust_failures_total{reason="refused_by_registrar"}';

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

describe.each(E2E_TRANSPORTS)(
  "e2e 1 over %s: class-1 propagation hub -> spoke B's agent",
  (transport) => {
    const net = useTransport(transport, ["hub", "east", "west"]);
    let prefix: string;
    let mesh: TempCopy | undefined;
    let hub: ClusterRegistrar;
    let spokeB: ClusterRegistrar;
    let agentB: AgentProcess;

    /** B's registrar (cluster east); `extra` may fix its `--listen` address. */
    const startSpokeB = (extra: string[] = []) =>
      startClusterRegistrar({
        ...{ endpoint: shared.etcd.endpoint, prefix, cluster: "east", controlCluster: "hub" },
        ...{ extra, tls: net.tls },
      });

    beforeAll(async () => {
      prefix = shared.freshPrefix();
      mesh = await tempCopy(join(EXAMPLES, "mesh"));
      [hub, spokeB] = await Promise.all([
        startClusterRegistrar({
          ...{ endpoint: shared.etcd.endpoint, prefix, cluster: "hub", controlCluster: "hub" },
          ...{ exportDir: mesh.path, tls: net.tls },
        }),
        startSpokeB(),
      ]);
      agentB = await startAgentProcess([
        ...spokeB.agentFlags("east"),
        ...["--cluster", "east", "--control-cluster", "hub", "--deps", DEPS.join(",")],
        ...["--backoff-max", "300ms"],
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

    it("B's registrar restarts on its address while the hub exports an edit: the agent's watch resumes and it applies the edit", async () => {
      const reconnects = await agentB.metric(RECONNECTS);
      const listen = new URL(spokeB.url).host;
      expect(await spokeB.stop()).toBe(0);
      const edited = await editCanaryOnHub(shared.raw, prefix, (mesh as TempCopy).path, 20, 80);
      spokeB = await startSpokeB(["--listen", listen]);
      await agentB.waitForMetric(RECONNECTS, (v) => v > reconnects, 15_000);
      await waitFor(
        async () => (await agentProjection(agentB, "shop/checkout"))?.version === edited,
        15_000,
        "the 20/80 edit at spoke B's agent after the restart",
      );
      expect(await agentB.get("/readyz")).toMatchObject({ status: 200 });
      expect(await agentB.metric(REFUSED_BY_REGISTRAR)).toBe(0);
    });

    if (transport === "mTLS") {
      it("B's registrar refuses plaintext (HTTP/1.1 and h2c) on its port and counts it as not_tls on its admin port", async () => {
        const notTls = 'aether_config_tls_handshake_failures_total{reason="not_tls"}';
        const before = (await scrapeMetric(spokeB.adminUrl, notTls)) ?? 0;
        const plain = spokeB.url.replace(/^https:/, "http:");
        await expect(configClient(plain).listAllConfig({})).rejects.toThrow();
        const h2c = createConnectTransport({ baseUrl: plain, httpVersion: "2" });
        await expect(createClient(ConfigService, h2c).listAllConfig({})).rejects.toThrow();
        await waitFor(
          async () => ((await scrapeMetric(spokeB.adminUrl, notTls)) ?? 0) >= before + 2,
          5_000,
          "both plaintext connections counted",
        );
        const overTls = await configClient(spokeB.url).listAllConfig({});
        // The hub's services and its mesh record (examples/mesh has a MeshConfig).
        expect(overTls.projections.map((p) => p.service).sort()).toEqual(
          [...DEPS, MESH_RECORD].sort(),
        );
      });

      it("B's registrar admits its own agent's SVID (--authorize names it) and denies west's agent SVID, logging its SPIFFE ID", async () => {
        const pki = net.tls as MeshPki;
        const denied = 'aether_config_denied_calls_total{reason="not_authorized"}';
        expect(await scrapeMetric(spokeB.adminUrl, denied)).toBe(0);
        expect((await agentB.routes()).length).toBe(DEPS.length);
        const westAgent = pki.agents.get("west");
        const nodeOptions = { ...clientTlsOptions(pki, "east", westAgent), agent: false as const };
        const westTransport = createConnectTransport({
          baseUrl: spokeB.url,
          httpVersion: "1.1",
          nodeOptions,
        });
        const error = await createClient(ConfigService, westTransport)
          .listAllConfig({})
          .catch((e: unknown) => e);
        expect(ConnectError.from(error).code).toBe(Code.PermissionDenied);
        expect(ConnectError.from(error).rawMessage).toContain(agentIdOf("west"));
        const line = await spokeB.waitForLog((l) => l.msg === "call denied");
        expect(line.peer).toBe(agentIdOf("west"));
        expect(await scrapeMetric(spokeB.adminUrl, denied)).toBe(1);
      });
    }
  },
);
