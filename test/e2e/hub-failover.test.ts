/**
 * e2e 6: hub leader failover. Two hub registrar replicas (separate OS
 * processes) export the same copy of examples/mesh into one real etcd; a
 * spoke registrar and its agent import it. A route is edited and the leader
 * is killed with SIGKILL right after (mid-edit): the standby takes over
 * within the lease TTL plus a margin, the edit lands in the store and at the
 * spoke's agent, and a raw etcd watch on the projection keys sees no DELETE
 * while the agent's table never loses a service.
 */
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import { MESH_RECORD } from "../../services/common/service-name.js";
import { parseProjectionKey } from "../../services/registrar/store/store-key.js";
import { type AgentProcess, startAgentProcess, stopAllAgents } from "../support/agent-process.js";
import {
  EXAMPLES,
  effectiveProjection,
  startClusterRegistrar,
  type TempCopy,
  tempCopy,
} from "../support/e2e-cluster.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import {
  type ChangeRecorder,
  readRawProjections,
  recordChanges,
  scrapeMetric,
  setCanaryWeights,
} from "../support/export-store.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("e2e6-");
const TTL_MS = 2_000; // startClusterRegistrar's --election-ttl
const DEPS = ["identity/users", "payments/ledger", "shop/cart", "shop/checkout"];

let prefix: string;
let mesh: TempCopy | undefined;
let recorder: ChangeRecorder | undefined;
let replicas: RegistrarProcess[] = [];
let agent: AgentProcess;

/** shop/checkout as the hub stored it. */
async function storedCheckout(): Promise<ServiceConfigProjection | undefined> {
  return (await readRawProjections(shared.raw, prefix, "hub")).get("shop/checkout")?.projection;
}

/** The weights of the checkout canary (the weighted rule) in `projection`, joined by commas. */
function canaryWeights(projection: ServiceConfigProjection | undefined): string | undefined {
  for (const route of projection?.routes ?? []) {
    for (const rule of route.rules) {
      if (rule.backends.length === 2) return rule.backends.map((b) => b.weight).join();
    }
  }
  return undefined;
}

const leaderGauge = (registrar: RegistrarProcess) =>
  scrapeMetric(registrar.url, "aether_config_export_leader");

beforeAll(async () => {
  prefix = shared.freshPrefix();
  mesh = await tempCopy(join(EXAMPLES, "mesh"));
  const common = { endpoint: shared.etcd.endpoint, prefix, controlCluster: "hub" };
  const hub = { ...common, cluster: "hub", exportDir: mesh.path };
  const started = await Promise.all([
    startClusterRegistrar(hub),
    startClusterRegistrar(hub),
    startClusterRegistrar({ ...common, cluster: "west" }),
  ]);
  replicas = started.slice(0, 2);
  const spoke = started[2] as RegistrarProcess;
  agent = await startAgentProcess([
    "--registrar",
    spoke.url,
    "--cluster",
    "west",
    "--control-cluster",
    "hub",
    "--deps",
    DEPS.join(","),
  ]);
  await agent.waitUntilReady();
  await waitFor(
    async () => (await agent.routes()).length === DEPS.length,
    15_000,
    "the spoke's agent to hold the hub's four services",
  );
}, 60_000);
afterAll(async () => {
  try {
    await recorder?.cancel();
  } finally {
    await stopAllAgents();
    await stopAllRegistrars();
    await mesh?.remove();
  }
});

describe("e2e 6: hub leader failover", () => {
  it("kill -9 of the leader right after an edit: the standby leads within TTL + margin, the edit lands in the store and at the spoke's agent, and no projection is deleted in between (raw etcd watch, agent table)", async () => {
    let gauges: (number | undefined)[] = [];
    await waitFor(
      async () => {
        gauges = await Promise.all(replicas.map(leaderGauge));
        return gauges.includes(1) && gauges.includes(0);
      },
      10_000,
      "one hub leader and one standby",
    );
    const leader = replicas[gauges.indexOf(1)] as RegistrarProcess;
    const standby = replicas[gauges.indexOf(0)] as RegistrarProcess;
    expect(standby.logs.filter((l) => l.msg === "elected export leader")).toHaveLength(0);
    const before = await readRawProjections(shared.raw, prefix, "hub");
    expect([...before.keys()].sort()).toEqual([...DEPS, MESH_RECORD].sort());
    const oldVersion = before.get("shop/checkout")?.projection.version;
    expect(canaryWeights(before.get("shop/checkout")?.projection)).toBe("90,10");
    const agentBefore = await agent.routes();

    // Every change to any projection key, and the agent's table size, from now on.
    recorder = await recordChanges(shared.raw, `${prefix}/clusters/`);
    const events = recorder.changes;
    let sampling = true;
    let smallestTable = DEPS.length;
    const sampler = (async () => {
      while (sampling) {
        const size = (await agent.routes()).length;
        smallestTable = Math.min(smallestTable, size);
        await delay(20);
      }
    })();

    try {
      // Mid-edit: the manifest changes and the leader dies before, or while, it exports.
      await setCanaryWeights((mesh as TempCopy).path, 60, 40);
      await leader.kill();
      const killedAt = Date.now();

      await waitFor(
        async () => (await leaderGauge(standby)) === 1,
        TTL_MS * 3,
        "the standby to become the export leader",
      );
      const elected = standby.logs.find((l) => l.msg === "elected export leader");
      const electedAfterMs = Date.parse(elected?.time as string) - killedAt;
      await waitFor(
        async () => canaryWeights(await storedCheckout()) === "60,40",
        TTL_MS * 3,
        "the edit in the store",
      );
      const landedAfterMs = Date.now() - killedAt;
      const newVersion = (await storedCheckout())?.version;
      expect(newVersion).not.toBe(oldVersion);
      expect((await effectiveProjection(standby.url, "shop/checkout"))?.version).toBe(newVersion);

      await waitFor(
        async () =>
          (await agent.routes()).find((e) => e.service === "shop/checkout")?.version === newVersion,
        10_000,
        "the edit at the spoke's agent",
      );
      const atAgentAfterMs = Date.now() - killedAt;
      const puts = events.filter((e) => e.type === "put").length;
      console.log(
        `hub failover: standby elected ${electedAfterMs} ms, edit in store ${landedAfterMs} ms, at the agent ${atAgentAfterMs} ms after kill -9 (TTL ${TTL_MS} ms); ${puts} put(s) on the projection keys`,
      );
      // The dead leader's lease lapses about one TTL after its last keep-alive; margin for load.
      expect(electedAfterMs).toBeLessThan(TTL_MS + 2_000);
      expect(standby.logs.filter((l) => l.msg === "elected export leader")).toHaveLength(1);
    } finally {
      sampling = false;
      await sampler;
    }

    // No projection disappeared: not one DELETE, only the edited service was written, and
    // the agent never held fewer services.
    expect(events.filter((e) => e.type === "delete")).toEqual([]);
    expect(events.length).toBeGreaterThanOrEqual(1);
    expect(new Set(events.map((e) => parseProjectionKey(prefix, e.key)?.service))).toEqual(
      new Set(["shop/checkout"]),
    );
    const after = await readRawProjections(shared.raw, prefix, "hub");
    expect([...after.keys()].sort()).toEqual([...DEPS, MESH_RECORD].sort());
    for (const service of DEPS.filter((s) => s !== "shop/checkout")) {
      expect(after.get(service)?.modRevision).toBe(before.get(service)?.modRevision);
    }
    expect(smallestTable).toBe(DEPS.length);
    const agentAfter = await agent.routes();
    expect(agentAfter.map((e) => e.service).sort()).toEqual(
      agentBefore.map((e) => e.service).sort(),
    );
  });
});
