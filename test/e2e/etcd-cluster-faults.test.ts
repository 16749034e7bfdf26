/**
 * e2e: a real 3-member etcd cluster under faults. A hub registrar exports a
 * copy of examples/mesh; a spoke registrar imports it and two agents follow
 * the spoke; every process is given all three endpoints. Faults: the etcd
 * leader killed (-9) during a burst of edits; a member frozen while the
 * spoke's watch goes through it; compaction past a registrar that is
 * behind; and quorum lost (2 of 3 members down) then restored, the
 * registrars serving their cache to the agents' streams meanwhile.
 */
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { Etcd3 } from "etcd3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigView, WatchEventType } from "../../gen/aether/registry/v1/config_service_pb.js";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import { formatVersion } from "../../services/common/projection-version.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import { type AgentProcess, startAgentProcess, stopAllAgents } from "../support/agent-process.js";
import { applyProblems, sampleAgents, tableShrinks } from "../support/apply-sampler.js";
import {
  configClient,
  convergedTo,
  EXAMPLES,
  editCanaryOnHub,
  startClusterRegistrar,
  type TempCopy,
  tempCopy,
} from "../support/e2e-cluster.js";
import { isStopped } from "../support/etcd.js";
import { type EtcdCluster, startEtcdCluster } from "../support/etcd-cluster.js";
import { type ChangeRecorder, readRawProjections, recordChanges } from "../support/export-store.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { scrapeMetric } from "../support/scrape-metric.js";
import { waitFor } from "../support/wait.js";
import { recordWatch } from "../support/watch-recorder.js";

const DEPS = ["identity/users", "payments/ledger", "shop/cart", "shop/checkout"];
const prefix = `/e2e-etcdc${process.pid}/aether/v1`;

let cluster: EtcdCluster;
let mesh: TempCopy | undefined;
let hub: RegistrarProcess;
let spoke: RegistrarProcess;
let agents: AgentProcess[] = [];
let changes: ChangeRecorder | undefined;
/** A weight the next canary edit sets, so that every edit is new content. */
let canary = 10;

/**
 * Edits the checkout canary on the hub and resolves with the version the hub stored,
 * read through `reader` (default every member; during a freeze, a client of the others,
 * so that the test's own reads never wait on the frozen member).
 */
function editOnHub(reader: Etcd3 = cluster.raw): Promise<string> {
  canary = canary >= 95 ? 11 : canary + 1;
  const path = (mesh as TempCopy).path;
  return editCanaryOnHub(reader, prefix, path, 100 - canary, canary);
}

/** Waits until every agent holds the hub's current version of every dependency. */
async function agentsConverged(what: string, timeoutMs = 15_000): Promise<Record<string, string>> {
  let versions: Record<string, string> = {};
  for (const agent of agents) versions = await convergedTo(hub.url, DEPS, agent, what, timeoutMs);
  return versions;
}

/** Waits until each agent holds `version` of shop/checkout. */
async function checkoutAtAgents(version: string, what: string, timeoutMs = 15_000): Promise<void> {
  for (const agent of agents) {
    await waitFor(
      async () =>
        (await agent.routes()).find((e) => e.service === "shop/checkout")?.version === version,
      timeoutMs,
      what,
    );
  }
}

const readyz = async (registrar: RegistrarProcess): Promise<number> => {
  try {
    const response = await fetch(`${registrar.adminUrl}/readyz`, {
      signal: AbortSignal.timeout(2_000),
    });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
};

const STORE_UNAVAILABLE = "aether_config_agent_registrar_store_unavailable";

const exportLeader = () => scrapeMetric(hub.url, "aether_config_export_leader");

/** The spoke's log lines that say it resumed its store watch on another member. */
const spokeResumed = () =>
  spoke.logs.filter((l) => l.msg === "etcd watch stream failed; resumed on another member");

/** The spoke's log lines that say it declared the store lost (its streams then flagged). */
const storeLost = () =>
  spoke.logs.filter(
    (l) => l.msg === "store lost; watch streams keep the last synced view until it is back",
  );

function startAgent(): Promise<AgentProcess> {
  return startAgentProcess([
    "--registrar",
    spoke.url,
    "--cluster",
    "west",
    "--control-cluster",
    "hub",
    "--deps",
    DEPS.join(","),
    "--poll-interval",
    "200ms",
    "--backoff-max",
    "300ms",
  ]);
}

beforeAll(async () => {
  cluster = await startEtcdCluster();
  mesh = await tempCopy(join(EXAMPLES, "mesh"));
  // Keep-alives every second: the streams say soon that the store is away, and back.
  const common = {
    endpoint: cluster.endpointList,
    prefix,
    controlCluster: "hub",
    extra: ["--keepalive", "1s"],
  };
  [hub, spoke] = await Promise.all([
    startClusterRegistrar({ ...common, cluster: "hub", exportDir: mesh.path }),
    startClusterRegistrar({ ...common, cluster: "west" }),
  ]);
  agents = await Promise.all([startAgent(), startAgent()]);
  await Promise.all(agents.map((a) => a.waitUntilReady()));
  await agentsConverged("both agents to hold the hub's four services");
  await waitFor(async () => (await exportLeader()) === 1, 10_000, "the hub to lead its export");
}, 60_000);

afterAll(async () => {
  try {
    await changes?.cancel();
    if (spoke !== undefined) process.kill(spoke.pid, "SIGCONT");
  } catch {
    // The spoke is gone already.
  } finally {
    await stopAllAgents();
    await stopAllRegistrars();
    await cluster?.stop();
    await mesh?.remove();
  }
});

describe("e2e: a 3-member etcd cluster under faults", () => {
  it("the etcd leader killed (-9) during a burst of hub edits: every agent converges on the final versions, never applies an older version, sees no DELETE, and the hub keeps or regains its export lease", async () => {
    const leader = await cluster.leader();
    changes = await recordChanges(cluster.raw, `${prefix}/clusters/`);
    const sampler = sampleAgents(agents);
    const edited: string[] = [];
    try {
      const burst = (async () => {
        for (let i = 0; i < 6; i++) edited.push(await editOnHub());
      })();
      await waitFor(() => edited.length >= 2, 15_000, "two edits of the burst in the store");
      await leader.kill();
      await burst;
      const next = await cluster.leader();
      expect(next.name).not.toBe(leader.name);
      await leader.start();
      await cluster.waitHealthy();
      const final = await agentsConverged("both agents to take the burst's last edit");
      expect(final["shop/checkout"]).toBe(edited.at(-1));
    } finally {
      await sampler.stop();
      await changes.cancel();
    }
    expect(new Set(edited).size).toBe(6);
    for (const samples of sampler.samples) {
      expect(samples.length).toBeGreaterThan(10);
      expect(applyProblems(samples, DEPS)).toEqual([]);
    }
    for (const agent of agents) expect(tableShrinks(agent.logs, DEPS.length)).toEqual([]);
    expect(changes.changes.filter((c) => c.type === "delete")).toEqual([]);
    await waitFor(async () => (await exportLeader()) === 1, 10_000, "the hub to lead its export");
  });

  it("a member frozen while the spoke's watch goes through it: the spoke resumes its watch on a healthy member without a gap or a store loss, and every edit made during and after the freeze reaches the agents within a few seconds", async () => {
    // The spoke's watch is on one member (picked at random); freezing each member in turn
    // freezes the one it is on at least once, and during that freeze the edit can reach the
    // agents only once the spoke has resumed its watch elsewhere (no store loss allowed: the
    // edit must come through the resumed watch). Bound, 8 s: the watch notices a silent
    // member within a probe interval (1 s) and a request timeout (1 s here); the hub's export
    // and the spoke's reads lose at most one attempt's share of a timeout to it; freezing the
    // etcd leader adds an election (1 s timeout) and can cost the hub its 2 s export lease.
    const resumedBefore = spokeResumed().length;
    const lostBefore = storeLost().length;
    const sampler = sampleAgents(agents);
    try {
      for (const [i, member] of cluster.members.entries()) {
        const others = new Etcd3({ hosts: cluster.endpoints.filter((_, j) => j !== i) });
        await member.freeze();
        try {
          const during = await editOnHub(others);
          await checkoutAtAgents(during, `the edit made while ${member.name} is frozen`, 8_000);
        } finally {
          await member.thaw();
          others.close();
        }
        const after = await editOnHub();
        await checkoutAtAgents(after, `the edit made after ${member.name} thawed`, 5_000);
      }
    } finally {
      await sampler.stop();
    }
    expect(spokeResumed().length).toBeGreaterThan(resumedBefore);
    expect(storeLost().slice(lostBefore)).toEqual([]);
    for (const samples of sampler.samples) expect(applyProblems(samples, DEPS)).toEqual([]);
    for (const agent of agents) expect(tableShrinks(agent.logs, DEPS.length)).toEqual([]);
    await cluster.waitHealthy();
  });

  it("compaction while the spoke is frozen behind: it re-lists, sweeps the projection deleted meanwhile, and agents see only the real change (no delete-then-upsert)", async () => {
    const ghostKey = projectionKey(prefix, "east", "shop/ghost");
    const ghost = create(ServiceConfigProjectionSchema, {
      service: "shop/ghost",
      originCluster: "east",
      version: formatVersion(BigInt(Date.now()) * 1_000_000n),
    });
    await cluster.raw
      .put(ghostKey)
      .value(Buffer.from(toBinary(ServiceConfigProjectionSchema, ghost)));
    const spokeOrigins = async () =>
      (
        await configClient(spoke.url).listAllConfig({ view: ConfigView.ALL_ORIGINS })
      ).projections.map((p) => `${p.originCluster}/${p.service}`);
    await waitFor(
      async () => (await spokeOrigins()).includes("east/shop/ghost"),
      10_000,
      "the spoke to list the ghost",
    );
    const before = await agentsConverged("both agents in step before the freeze");
    const watch = recordWatch(configClient(spoke.url), { services: DEPS });
    await watch.until(
      (events) => events.some((e) => e.type === WatchEventType.SYNCED),
      20_000,
      "the watch's SYNCED marker",
    );
    const seen = watch.events.length;

    process.kill(spoke.pid, "SIGSTOP");
    let edited: string;
    try {
      await waitFor(() => isStopped(spoke.pid), 5_000, "the spoke to stop", 1);
      edited = await editOnHub();
      // Enough changes in the spoke's watch range (keys it ignores) to fill what etcd can send
      // to a reader that does not read, so that its watcher falls behind and is compacted.
      const filler = Buffer.alloc(2_048, "x");
      for (let batch = 0; batch < 15; batch++) {
        await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            cluster.raw.put(`${prefix}/clusters/filler/endpoints/k${i}`).value(filler),
          ),
        );
      }
      // Deleted after the filler: the spoke can learn it only from a new listing.
      await cluster.raw.delete().key(ghostKey);
      await cluster.compact();
    } finally {
      process.kill(spoke.pid, "SIGCONT");
    }
    await spoke.waitForLog((l) => l.msg === "store watch compacted; re-listing", 15_000);
    await waitFor(
      async () => !(await spokeOrigins()).includes("east/shop/ghost"),
      10_000,
      "the spoke to sweep the ghost",
    );
    await checkoutAtAgents(edited, "the edit made while the spoke was frozen");
    const after = await agentsConverged("both agents in step after the re-list");
    for (const s of DEPS.filter((s) => s !== "shop/checkout")) expect(after[s]).toBe(before[s]);

    // The same stream, across the compaction and re-list: only the real change, once.
    await watch.until(
      (events) => events.slice(seen).some((e) => e.projection?.version === edited),
      10_000,
      "the edit on the recorded stream",
    );
    expect(watch.done).toBe(false);
    const later = watch.events.slice(seen).filter((e) => e.type !== WatchEventType.KEEPALIVE);
    await watch.cancel();
    for (const agent of agents) expect(tableShrinks(agent.logs, DEPS.length)).toEqual([]);
    expect(later.map((e) => `${e.type}:${e.service}@${e.projection?.version ?? ""}`)).toEqual([
      `${WatchEventType.UPSERT}:shop/checkout@${edited}`,
    ]);
  });

  it("quorum lost (2 of 3 members killed): the registrars report not-ready and keep serving their cache to the agents' open streams and to a new one, agents keep their tables, nothing is deleted; once quorum returns everything recovers and an edit reaches the same streams", async () => {
    const tables = await Promise.all(agents.map(async (a) => (await a.get("/routes")).body));
    const reconnects = await Promise.all(
      agents.map((a) => a.metric("aether_config_stream_reconnects_total")),
    );
    const stored = await readRawProjections(cluster.raw, prefix, "hub");
    changes = await recordChanges(cluster.raw, `${prefix}/clusters/`);
    const [first, second] = cluster.members.slice(1);
    await Promise.all([first?.kill(), second?.kill()]);
    try {
      for (const registrar of [hub, spoke]) {
        await waitFor(
          async () => (await readyz(registrar)) === 503,
          15_000,
          "a registrar to report not ready",
        );
      }
      // Export pauses: the hub cannot keep its lease without a quorum.
      await waitFor(
        async () => (await exportLeader()) === 0,
        10_000,
        "the hub to pause its export",
      );
      // The spoke answers a listing at once, with UNAVAILABLE (its contract: back off, keep
      // last-known), rather than hanging or serving a view it cannot confirm.
      const listing = configClient(spoke.url).listConfig({ originCluster: "hub", services: DEPS });
      await expect(listing).rejects.toThrow(/unavailable/i);
      // Its streams stay open on the view it last synced, and say so.
      for (const agent of agents) {
        await agent.waitForMetric(STORE_UNAVAILABLE, (v) => v === 1, 15_000);
      }
      for (const [i, agent] of agents.entries()) {
        expect((await agent.get("/routes")).body).toBe(tables[i]);
        expect((await agent.get("/readyz")).status).toBe(200);
      }
      // A consumer that connects now (a restarted agent without a cache) gets that view.
      const late = recordWatch(configClient(spoke.url), {
        services: DEPS,
        view: ConfigView.ALL_ORIGINS,
      });
      try {
        await late.until(
          (e) => e.some((x) => x.type === WatchEventType.SYNCED),
          10_000,
          "a new stream's retained snapshot",
        );
        const snapshot = late.events.filter((x) => x.type === WatchEventType.SNAPSHOT);
        expect(snapshot.map((x) => x.service).sort()).toEqual(DEPS);
        expect(late.events.find((x) => x.type === WatchEventType.SYNCED)?.storeUnavailable).toBe(
          true,
        );
      } finally {
        await late.cancel();
      }
    } finally {
      await Promise.all([first?.start(), second?.start()]);
    }
    await cluster.waitHealthy();
    for (const registrar of [hub, spoke]) {
      await waitFor(
        async () => (await readyz(registrar)) === 200,
        15_000,
        "a registrar to be ready again",
      );
    }
    const edited = await editOnHub();
    await checkoutAtAgents(edited, "the edit made after quorum returned");
    await waitFor(async () => (await exportLeader()) === 1, 10_000, "the hub to lead its export");
    for (const [i, agent] of agents.entries()) {
      await agent.waitForMetric(STORE_UNAVAILABLE, (v) => v === 0, 15_000);
      // The same streams carried it all: no reconnect.
      expect(await agent.metric("aether_config_stream_reconnects_total")).toBe(reconnects[i]);
    }
    await changes.cancel();
    expect(changes.changes.filter((c) => c.type === "delete")).toEqual([]);
    const now = await readRawProjections(cluster.raw, prefix, "hub");
    expect([...now.keys()].sort()).toEqual([...stored.keys()].sort());
    for (const agent of agents) expect(tableShrinks(agent.logs, DEPS.length)).toEqual([]);
  });
});
