/**
 * e2e 2: a class-2 local override in spoke B (its agent's --local-source
 * dir:examples/local/west) stays in B: spoke A's agent keeps the hub's
 * canary, nothing is stored under B's origin, and the hub's projection is
 * untouched. Every process separate, over one real etcd; run twice, plaintext
 * and mutual TLS (a CA per cluster).
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentProcess, startAgentProcess, stopAllAgents } from "../support/agent-process.js";
import {
  agentProjection,
  type ClusterRegistrar,
  decide,
  EXAMPLES,
  effectiveProjection,
  http,
  type MeshCase,
  startClusterRegistrar,
  type TempCopy,
  tempCopy,
} from "../support/e2e-cluster.js";
import { E2E_TRANSPORTS, useTransport } from "../support/e2e-transports.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { readRawProjections } from "../support/export-store.js";
import { stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("e2e2-");

const CANARY: MeshCase = {
  name: "checkout, canary draw 0.95",
  service: "shop/checkout",
  request: http("GET", "checkout.shop", "/orders"),
  random: 0.95,
};

describe.each(E2E_TRANSPORTS)(
  "e2e 2 over %s: a class-2 override in spoke B does not leak",
  (transport) => {
    const net = useTransport(transport, ["hub", "east", "west"]);
    let prefix: string;
    let mesh: TempCopy | undefined;
    let hub: ClusterRegistrar;
    let agentA: AgentProcess;
    let agentB: AgentProcess;

    function agentOf(registrar: ClusterRegistrar, cluster: string, extra: string[] = []) {
      return startAgentProcess([
        ...registrar.agentFlags(cluster),
        "--cluster",
        cluster,
        "--control-cluster",
        "hub",
        "--deps",
        "shop/checkout,shop/cart",
        ...extra,
      ]);
    }

    beforeAll(async () => {
      prefix = shared.freshPrefix();
      mesh = await tempCopy(join(EXAMPLES, "mesh"));
      const common = {
        endpoint: shared.etcd.endpoint,
        prefix,
        controlCluster: "hub",
        tls: net.tls,
      };
      let spokeA: ClusterRegistrar;
      let spokeB: ClusterRegistrar;
      [hub, spokeA, spokeB] = await Promise.all([
        startClusterRegistrar({ ...common, cluster: "hub", exportDir: mesh.path }),
        startClusterRegistrar({ ...common, cluster: "east" }),
        startClusterRegistrar({ ...common, cluster: "west" }),
      ]);
      [agentA, agentB] = await Promise.all([
        agentOf(spokeA, "east"),
        agentOf(spokeB, "west", ["--local-source", `dir:${join(EXAMPLES, "local/west")}`]),
      ]);
      await Promise.all([agentA.waitUntilReady(), agentB.waitUntilReady()]);
      await waitFor(
        async () => (await agentA.routes()).length === 2 && (await agentB.routes()).length === 2,
        15_000,
        "both agents to hold shop/checkout and shop/cart",
      );
    }, 60_000);
    afterAll(async () => {
      await stopAllAgents();
      await stopAllRegistrars();
      await mesh?.remove();
    });

    it("spoke B's agent applies its local override (source local, origin west, all to checkout-v1) while spoke A's agent keeps the hub's canary", async () => {
      const b = (await agentB.routes()).map((e) => `${e.service} ${e.origin} ${e.source}`);
      expect(b).toEqual(["shop/cart hub imported", "shop/checkout west local"]);
      const a = (await agentA.routes()).map((e) => `${e.service} ${e.origin} ${e.source}`);
      expect(a).toEqual(["shop/cart hub imported", "shop/checkout hub imported"]);

      const atB = decide(await agentProjection(agentB, "shop/checkout"), CANARY);
      expect(atB.backend?.service).toBe("shop/checkout-v1");
      expect(atB.requestHeaders["x-routed-by"]).toEqual(["west-local"]);
      const atA = decide(await agentProjection(agentA, "shop/checkout"), CANARY);
      expect(atA.backend?.service).toBe("shop/checkout-v2");
      expect(atA).toEqual(decide(await effectiveProjection(hub.url, "shop/checkout"), CANARY));
    });

    it("the store holds nothing under spoke B's origin (raw etcd) and the hub's projection and spoke A's copy are unchanged", async () => {
      const hubBefore = await readRawProjections(shared.raw, prefix, "hub");
      const keys = await shared.raw.getAll().prefix(prefix).keys();
      // West publishes its import status (versions, counts, digests), never config.
      const westKeys = keys.filter((k) => k.includes("west"));
      expect(westKeys.filter((k) => !k.startsWith(`${prefix}/clusters/west/status/`))).toEqual([]);
      expect((await readRawProjections(shared.raw, prefix, "west")).size).toBe(0);
      const effective = await effectiveProjection(hub.url, "shop/checkout");
      expect(effective?.originCluster).toBe("hub");
      expect(effective?.version).toBe(hubBefore.get("shop/checkout")?.projection.version);
      expect(effective?.routes.map((r) => r.name)).not.toContain("checkout-west-no-canary");
      expect((await agentA.routes()).find((e) => e.service === "shop/checkout")?.version).toBe(
        hubBefore.get("shop/checkout")?.projection.version,
      );
    });
  },
);
