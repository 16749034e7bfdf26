/**
 * e2e 5: control-cluster mode (every process --control-cluster hub). A
 * spoke registrar given --export-source anyway writes nothing and says why;
 * a projection written under a spoke's prefix with a newer version (a raw
 * etcd put) is rejected by every importer (both registrars and the agent),
 * counted, and never applied. Run twice: plaintext and mutual TLS (a CA per
 * cluster; metrics read on the registrars' admin ports).
 */
import { join } from "node:path";
import { toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import { MESH_RECORD } from "../../services/common/service-name.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import { type AgentProcess, startAgentProcess, stopAllAgents } from "../support/agent-process.js";
import {
  type ClusterRegistrar,
  configClient,
  EXAMPLES,
  effectiveProjection,
  startClusterRegistrar,
  type TempCopy,
  tempCopy,
  winnerOf,
} from "../support/e2e-cluster.js";
import { E2E_TRANSPORTS, useTransport } from "../support/e2e-transports.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { readRawProjections, scrapeMetric } from "../support/export-store.js";
import { makeProjection } from "../support/projections.js";
import { stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("e2e5-");

const UNTRUSTED_GAUGE = 'aether_config_import_rejected{reason="untrusted_origin"}';
const UNTRUSTED_AGENT = 'aether_config_import_rejections_total{reason="untrusted_origin"}';

describe.each(E2E_TRANSPORTS)(
  "e2e 5 over %s: control-cluster mode rejects what spokes export",
  (transport) => {
    const net = useTransport(transport, ["hub", "east"]);
    let prefix: string;
    let mesh: TempCopy | undefined;
    let hub: ClusterRegistrar;
    let spoke: ClusterRegistrar;
    let agent: AgentProcess;

    beforeAll(async () => {
      prefix = shared.freshPrefix();
      mesh = await tempCopy(join(EXAMPLES, "mesh"));
      const common = {
        endpoint: shared.etcd.endpoint,
        prefix,
        controlCluster: "hub",
        tls: net.tls,
      };
      [hub, spoke] = await Promise.all([
        startClusterRegistrar({ ...common, cluster: "hub", exportDir: mesh.path }),
        // Misconfigured: a spoke told to export in control-cluster mode.
        startClusterRegistrar({ ...common, cluster: "east", exportDir: mesh.path }),
      ]);
      agent = await startAgentProcess([
        ...spoke.agentFlags("east"),
        "--cluster",
        "east",
        "--control-cluster",
        "hub",
        "--deps",
        "shop/checkout",
      ]);
      await agent.waitUntilReady();
      await waitFor(
        async () => (await agent.routes()).length === 1,
        15_000,
        "the agent to hold the hub's shop/checkout",
      );
    }, 60_000);
    afterAll(async () => {
      await stopAllAgents();
      await stopAllRegistrars();
      await mesh?.remove();
    });

    it("a spoke registrar with --export-source in control-cluster mode writes nothing under its origin, logs why and reports export disabled", async () => {
      const why = await spoke.waitForLog((l) => l.controlCluster === "hub" && l.origin === "east");
      expect(why.level).toBe("warn");
      expect(String(why.msg)).not.toBe("");
      const status = await configClient(spoke.url).getConfigStatus({});
      expect(status.controlCluster).toBe("hub");
      expect(status.export?.enabled).toBe(false);
      expect(status.export?.disabledReason).toBe(why.msg);
      // The hub exported the mesh meanwhile (four services and its mesh record); the spoke wrote nothing.
      const hubKeys = [...(await readRawProjections(shared.raw, prefix, "hub")).keys()];
      expect(hubKeys).toHaveLength(5);
      expect(hubKeys).toContain(MESH_RECORD);
      expect((await readRawProjections(shared.raw, prefix, "east")).size).toBe(0);
    });

    it("a newer projection put raw under the spoke's prefix is rejected by both registrars (GetConfigStatus, aether_config_import_rejected) and the agent (untrusted_origin counter), and not applied", async () => {
      const hubCheckout = await effectiveProjection(hub.url, "shop/checkout");
      expect(hubCheckout?.originCluster).toBe("hub");
      expect(await agent.metric(UNTRUSTED_AGENT)).toBe(0);
      const rogue = makeProjection("shop/checkout", {
        version: "2099-01-01T00:00:00.000000000Z",
        backend: "rogue/sink",
        origin: "east",
      });
      await shared.raw
        .put(projectionKey(prefix, "east", "shop/checkout"))
        .value(Buffer.from(toBinary(ServiceConfigProjectionSchema, rogue)));

      for (const registrar of [hub, spoke]) {
        await waitFor(
          async () => (await scrapeMetric(registrar.adminUrl, UNTRUSTED_GAUGE)) === 1,
          10_000,
          `${registrar.url} to count the untrusted projection`,
        );
        const status = await configClient(registrar.url).getConfigStatus({});
        expect(status.rejections.map((r) => [r.service, r.originCluster, r.reason])).toEqual([
          ["shop/checkout", "east", "untrusted_origin"],
        ]);
        expect(winnerOf(await effectiveProjection(registrar.url, "shop/checkout"))).toBe(
          winnerOf(hubCheckout),
        );
      }
      await agent.waitForMetric(UNTRUSTED_AGENT, (v) => v >= 1);
      const entries = await agent.routes();
      expect(entries.map((e) => `${e.service} ${e.origin} ${e.version}`)).toEqual([
        `shop/checkout hub ${hubCheckout?.version}`,
      ]);
      expect(JSON.stringify(entries)).not.toContain("rogue/sink");
    });
  },
);
