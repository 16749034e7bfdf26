/**
 * Two registrar replicas of one cluster (two OS processes) exporting the same
 * manifest directory into one real etcd: exactly one leads and writes; when
 * it is killed with SIGKILL, the other takes over once the dead leader's
 * lease expires, exports an edit made after the kill, and no projection
 * disappears in between (a raw etcd watch on the projection keys sees no
 * DELETE at all). A leader frozen past its lease is replaced too, and writes
 * nothing once it thaws.
 */
import { afterEach, describe, expect, it } from "vitest";
import { useSharedEtcd } from "../support/etcd-suite.js";
import {
  type ChangeRecorder,
  readRawProjections,
  recordChanges,
  scrapeMetric,
  setCanaryWeights,
  startExportRegistrar,
  storedCanaryWeights,
} from "../support/export-store.js";
import { copyExportFixtures, type FixtureDir } from "../support/memory-source.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const TTL_MS = 2_000;

const shared = useSharedEtcd("f");
let dir: FixtureDir | undefined;
let recorder: ChangeRecorder | undefined;

afterEach(async () => {
  await recorder?.cancel();
  recorder = undefined;
  await stopAllRegistrars();
  await dir?.remove();
  dir = undefined;
});

const leaderGauge = (registrar: RegistrarProcess) =>
  scrapeMetric(registrar.url, "aether_config_export_leader");
const puts = (registrar: RegistrarProcess) =>
  scrapeMetric(registrar.url, 'aether_config_export_writes_total{op="put"}');

/**
 * Starts two replicas of `hub` exporting a fresh fixture copy under `prefix`,
 * and resolves once they have exported it and agree on one leader.
 */
async function twoReplicas(prefix: string) {
  dir = await copyExportFixtures();
  const options = { endpoint: shared.etcd.endpoint, prefix, dir: dir.path, electionTtl: "2s" };
  const replicas = await Promise.all([
    startExportRegistrar(options),
    startExportRegistrar(options),
  ]);
  await waitFor(
    async () => (await readRawProjections(shared.raw, prefix, "hub")).size === 3,
    10_000,
    "the first export",
  );
  let gauges: (number | undefined)[] = [];
  await waitFor(
    async () => {
      gauges = await Promise.all(replicas.map(leaderGauge));
      return gauges.includes(1) && gauges.includes(0);
    },
    10_000,
    "one leader and one standby",
  );
  return {
    dir: dir.path,
    leader: replicas[gauges.indexOf(1)] as RegistrarProcess,
    standby: replicas[gauges.indexOf(0)] as RegistrarProcess,
  };
}

describe("two export replicas over one etcd", () => {
  it("exactly one leads; after kill -9 the other exports within the lease TTL, and no projection disappears", async () => {
    const prefix = shared.freshPrefix();
    const { dir: path, leader, standby } = await twoReplicas(prefix);
    expect(leader.logs.filter((l) => l.msg === "elected export leader")).toHaveLength(1);
    expect(standby.logs.filter((l) => l.msg === "elected export leader")).toHaveLength(0);
    expect(await puts(standby)).toBe(0);
    const before = await readRawProjections(shared.raw, prefix, "hub");

    // Every change to a projection key from now on.
    recorder = await recordChanges(shared.raw, `${prefix}/clusters/`);
    const events = recorder.changes;

    await leader.kill();
    const killedAt = Date.now();
    await setCanaryWeights(path, 80, 20);
    await waitFor(
      async () => (await storedCanaryWeights(shared.raw, prefix)) === "80,20",
      TTL_MS * 3,
      "the survivor to export the edit",
    );
    const takeoverMs = Date.now() - killedAt;
    const elected = standby.logs.find((l) => l.msg === "elected export leader");
    const electedAfterMs = Date.parse(elected?.time as string) - killedAt;
    console.log(
      `export failover: elected ${electedAfterMs} ms and edit exported ${takeoverMs} ms after kill -9 (lease TTL ${TTL_MS} ms)`,
    );
    // The dead leader's lease expires at most one TTL after its last keep-alive
    // (sent every TTL/3), and etcd checks for expired leases every 500 ms:
    // about one TTL, with room for a loaded machine.
    expect(electedAfterMs).toBeLessThan(TTL_MS + 1_000);
    expect(takeoverMs).toBeLessThan(TTL_MS + 1_500);
    expect(await leaderGauge(standby)).toBe(1);

    // No projection disappeared: no DELETE at all, one PUT (the edited service).
    await waitFor(() => events.length >= 1);
    expect(events.filter((e) => e.type === "delete")).toEqual([]);
    expect(events.map((e) => e.type)).toEqual(["put"]);
    const after = await readRawProjections(shared.raw, prefix, "hub");
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    for (const service of ["payments/ledger", "web/frontend"]) {
      expect(after.get(service)?.modRevision).toBe(before.get(service)?.modRevision);
    }
  });

  it("a leader frozen past its lease (SIGSTOP) is replaced, and after it thaws it writes nothing and stands by", async () => {
    const prefix = shared.freshPrefix();
    const { dir: path, leader, standby } = await twoReplicas(prefix);
    const writesBefore = await puts(leader);

    process.kill(leader.pid, "SIGSTOP");
    await setCanaryWeights(path, 70, 30);
    await waitFor(
      async () => (await storedCanaryWeights(shared.raw, prefix)) === "70,30",
      TTL_MS * 3,
      "the standby to take over and export the edit",
    );
    const exported = await readRawProjections(shared.raw, prefix, "hub");

    process.kill(leader.pid, "SIGCONT");
    await leader.waitForLog((l) => l.msg === "export leadership lost", 5_000);
    await waitFor(
      async () => (await leaderGauge(leader)) === 0,
      5_000,
      "the old leader to stand by",
    );
    expect(await leaderGauge(standby)).toBe(1);
    expect(await puts(leader)).toBe(writesBefore);
    const after = await readRawProjections(shared.raw, prefix, "hub");
    for (const [service, p] of after) {
      expect(p.modRevision).toBe(exported.get(service)?.modRevision);
    }
  });
});
