/**
 * e2e: fleet status. A hub exporting examples/mesh and two spokes (east,
 * west), each spoke with an agent and a local source (west's overrides
 * shop/checkout, east's is empty), every process separate over one real
 * etcd. The hub answers GetFleetStatus (and `aetherctl fleet -o json`) for
 * the fleet, and west answers the same: (a) every cluster in sync, west's local override as drift of
 * exactly shop/checkout in west; (b) an edit on the hub in sync everywhere
 * within seconds; (c) east's agent frozen: east behind, and in sync again
 * once it runs; (d) a projection of an origin the spokes do not trust
 * shows at the hub as each spoke's rejection, with the reason; (e) a killed
 * spoke registrar shows as stale, never as in sync. Run twice, plaintext
 * and mutual TLS.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FleetState, type GetFleetStatusResponse } from "../../gen/aether/registry/v1/fleet_pb.js";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import { runAetherctlInProcess } from "../support/aetherctl-in-process.js";
import { type AgentProcess, startAgentProcess, stopAllAgents } from "../support/agent-process.js";
import {
  type ClusterRegistrar,
  configClient,
  EXAMPLES,
  editCanaryOnHub,
  startClusterRegistrar,
  type TempCopy,
  tempCopy,
} from "../support/e2e-cluster.js";
import { operatorMtlsFlags } from "../support/e2e-mesh-pki.js";
import { E2E_TRANSPORTS, useTransport } from "../support/e2e-transports.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("e2e-fleet-");
const CHECKOUT = "shop/checkout";
const DEPS = "shop/checkout,shop/cart,payments/ledger";
/** Fast enough for a test: the report interval (an agent is forgotten after three). */
const FLEET_FLAGS = [
  ...["--agent-report-interval", "5s"],
  ...["--status-heartbeat", "1s"],
  ...["--status-interval", "200ms"],
];

/** One service in one cluster, from a fleet answer: `state version`. */
function cell(fleet: GetFleetStatusResponse, service: string, cluster: string): string {
  const entry = fleet.services
    .find((s) => s.service === service)
    ?.clusters.find((c) => c.cluster === cluster);
  return entry === undefined ? "absent" : `${FleetState[entry.state]} ${entry.version}`;
}

describe.each(E2E_TRANSPORTS)("e2e over %s: fleet status", (transport) => {
  const net = useTransport(transport, ["hub", "east", "west"]);
  let prefix: string;
  let mesh: TempCopy | undefined;
  let eastLocal: string | undefined;
  let hub: ClusterRegistrar;
  let west: ClusterRegistrar;
  let eastAgent: AgentProcess;

  const fleet = (services: string[] = []) =>
    configClient(hub.url).getFleetStatus({ services, limit: 1000 });
  /** The hub's current version of shop/checkout. */
  const current = async () => (await fleet([CHECKOUT])).services[0]?.version ?? "";

  beforeAll(async () => {
    prefix = shared.freshPrefix();
    mesh = await tempCopy(join(EXAMPLES, "mesh"));
    eastLocal = await mkdtemp(join(tmpdir(), "aether-e2e-east-"));
    const common = { endpoint: shared.etcd.endpoint, prefix, controlCluster: "hub", tls: net.tls };
    const local = (dir: string) => ["--local-source", `dir:${dir}`];
    const [h, e, w] = await Promise.all([
      startClusterRegistrar({
        ...common,
        cluster: "hub",
        exportDir: mesh.path,
        extra: FLEET_FLAGS,
      }),
      startClusterRegistrar({
        ...common,
        cluster: "east",
        extra: [...FLEET_FLAGS, ...local(eastLocal)],
      }),
      startClusterRegistrar({
        ...common,
        cluster: "west",
        extra: [...FLEET_FLAGS, ...local(join(EXAMPLES, "local/west"))],
      }),
    ]);
    hub = h;
    west = w;
    const agentOf = (registrar: ClusterRegistrar, extra: string[] = []) =>
      startAgentProcess([
        ...registrar.agentFlags(registrar.cluster),
        ...["--cluster", registrar.cluster, "--control-cluster", "hub", "--deps", DEPS],
        ...extra,
      ]);
    const [eastA, westA] = await Promise.all([
      agentOf(e),
      agentOf(w, ["--local-source", `dir:${join(EXAMPLES, "local/west")}`]),
    ]);
    eastAgent = eastA;
    await Promise.all([eastA.waitUntilReady(), westA.waitUntilReady()]);
  }, 60_000);
  afterAll(async () => {
    await stopAllAgents();
    await stopAllRegistrars();
    await mesh?.remove();
    if (eastLocal !== undefined) await rm(eastLocal, { recursive: true, force: true });
  });

  it("(a) every cluster in sync; west's local override is drift of exactly shop/checkout in west", async () => {
    let answer: GetFleetStatusResponse | undefined;
    await waitFor(
      async () => {
        answer = await fleet();
        const version = answer.services.find((s) => s.service === CHECKOUT)?.version ?? "";
        const agentsInSync = (service: string, cluster: string) =>
          answer?.services
            .find((s) => s.service === service)
            ?.clusters.find((c) => c.cluster === cluster)?.agents?.inSync;
        return (
          version !== "" &&
          cell(answer, CHECKOUT, "east") === `IN_SYNC ${version}` &&
          cell(answer, CHECKOUT, "west") === `DRIFTED ${version}` &&
          cell(answer, "shop/cart", "west") !== "absent" &&
          // Each spoke's agent's report is in its cluster's published status (an agent that
          // reported before its first import counts as behind until its next report).
          agentsInSync("shop/cart", "east") === 1 &&
          agentsInSync(CHECKOUT, "west") === 1
        );
      },
      20_000,
      "the hub's fleet view to show east in sync and west drifted on shop/checkout, each with its agent",
    );
    const view = answer as GetFleetStatusResponse;
    expect(view.clusters.map((c) => [c.cluster, c.stale])).toEqual([
      ["east", false],
      ["hub", false],
      ["west", false],
    ]);
    for (const service of view.services) {
      expect(service.driftedClusters).toEqual(service.service === CHECKOUT ? ["west"] : []);
      for (const entry of service.clusters) {
        const want =
          service.service === CHECKOUT && entry.cluster === "west" ? "DRIFTED" : "IN_SYNC";
        expect(`${service.service} ${entry.cluster} ${FleetState[entry.state]}`).toBe(
          `${service.service} ${entry.cluster} ${want}`,
        );
        expect(entry.version).toBe(service.version);
      }
    }
    const json = JSON.parse(
      (
        await runAetherctlInProcess([
          ...["fleet", "--registrar", hub.url, "-o", "json"],
          ...(net.tls === undefined ? [] : operatorMtlsFlags(net.tls, "hub")),
        ])
      ).stdout,
    );
    expect(
      json.services
        .find((s: { service: string }) => s.service === CHECKOUT)
        .clusters.map((c: { cluster: string; state: string }) => `${c.cluster} ${c.state}`),
    ).toEqual(["east FLEET_STATE_IN_SYNC", "hub FLEET_STATE_IN_SYNC", "west FLEET_STATE_DRIFTED"]);
    // Any registrar answers for the whole fleet: a spoke's answer is the hub's.
    const cells = (answer: GetFleetStatusResponse) =>
      answer.services.flatMap((s) =>
        s.clusters.map((c) => `${s.service} ${c.cluster} ${cell(answer, s.service, c.cluster)}`),
      );
    let westAnswer: GetFleetStatusResponse | undefined;
    await waitFor(
      async () => {
        westAnswer = await configClient(west.url).getFleetStatus({ services: [], limit: 1000 });
        return JSON.stringify(cells(westAnswer)) === JSON.stringify(cells(view));
      },
      10_000,
      "west's fleet view to be the hub's",
    );
    expect(westAnswer?.services.find((s) => s.service === CHECKOUT)?.driftedClusters).toEqual([
      "west",
    ]);
  });

  it("(b) an edit on the hub is in sync in every cluster within seconds", async () => {
    const version = await editCanaryOnHub(shared.raw, prefix, mesh?.path ?? "", 70, 30);
    await waitFor(
      async () => {
        const answer = await fleet([CHECKOUT]);
        return (
          answer.services[0]?.version === version &&
          cell(answer, CHECKOUT, "east") === `IN_SYNC ${version}` &&
          cell(answer, CHECKOUT, "west") === `DRIFTED ${version}`
        );
      },
      10_000,
      "every cluster to serve and apply the edit",
    );
  });

  it("(c) east's agent frozen: east is behind; running again, in sync", async () => {
    process.kill(eastAgent.pid, "SIGSTOP");
    try {
      const version = await editCanaryOnHub(shared.raw, prefix, mesh?.path ?? "", 60, 40);
      await waitFor(
        async () => {
          const entry = (await fleet([CHECKOUT])).services[0]?.clusters.find(
            (c) => c.cluster === "east",
          );
          return entry?.state === FleetState.BEHIND && entry.version === version;
        },
        10_000,
        "east to serve the edit while its frozen agent is behind",
      );
      const east = (await fleet([CHECKOUT])).services[0]?.clusters.find(
        (c) => c.cluster === "east",
      );
      expect(east?.agents?.behind).toBe(1);
    } finally {
      process.kill(eastAgent.pid, "SIGCONT");
    }
    await waitFor(
      async () => cell(await fleet([CHECKOUT]), CHECKOUT, "east") === `IN_SYNC ${await current()}`,
      10_000,
      "east's agent to apply the edit once it runs again",
    );
  });

  it("(d) a projection of an untrusted origin shows at the hub as each spoke's rejection, with the reason", async () => {
    const rogue = create(ServiceConfigProjectionSchema, {
      service: CHECKOUT,
      originCluster: "rogue",
      version: "2099-01-01T00:00:00.000000000Z",
    });
    await shared.raw
      .put(projectionKey(prefix, "rogue", CHECKOUT))
      .value(Buffer.from(toBinary(ServiceConfigProjectionSchema, rogue)));
    for (const cluster of ["east", "west"]) {
      await waitFor(
        async () => {
          const entry = (await fleet([CHECKOUT])).services[0]?.clusters.find(
            (c) => c.cluster === cluster,
          );
          return (entry?.importRejections ?? []).some(
            (r) => r.originCluster === "rogue" && r.reason === "untrusted_origin",
          );
        },
        10_000,
        `the hub to show ${cluster}'s rejection of rogue's shop/checkout`,
      );
    }
    await shared.raw.delete().key(projectionKey(prefix, "rogue", CHECKOUT));
  });

  it("(e) a killed spoke registrar shows as stale, never as in sync", async () => {
    await west.kill();
    await waitFor(
      async () => (await fleet()).clusters.find((c) => c.cluster === "west")?.stale === true,
      10_000,
      "the hub to show west stale",
    );
    const answer = await fleet();
    for (const service of answer.services) {
      const entry = service.clusters.find((c) => c.cluster === "west");
      if (entry !== undefined) expect(FleetState[entry.state]).toBe("STALE");
    }
  });
});
