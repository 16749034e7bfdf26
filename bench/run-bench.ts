/**
 * The benchmark's phases, run in order on one real etcd:
 *
 * 1. **Cold export**: a hub registrar process (`--export-source dir:`) over
 *    manifests of N services, from spawn until all N projections are in etcd.
 * 2. **ListAllConfig** of N services through the generated client.
 * 3. **Fleet**: M agents (real `createAgent`s, one HTTP/2 connection and one
 *    watch stream each) in worker processes, on a spoke registrar process.
 * 4. **Propagation vs the floor**: C route edits through the export
 *    controller (hosted here so the moment of its store write is known
 *    exactly), each until every interested agent applied it, interleaved
 *    with C raw etcd puts to a raw watcher in a worker (the physical floor).
 *    Bytes every agent read off its socket are counted per change.
 * 5. **Registrar restart**: SIGTERM the spoke registrar, start it again on
 *    the same port, until every agent received SYNCED on a new stream;
 *    the new registrar's peak CPU and RSS meanwhile.
 * 6. **Cold sync and agent memory**: one fresh agent (library) start to
 *    first table; one real agent process's RSS.
 * 7. **Polling baseline**: the fleet again in poll mode at the default
 *    interval, P edits.
 */

import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ConfigService, ConfigView } from "../gen/aether/registry/v1/config_service_pb.js";
import { ServiceConfigProjectionSchema } from "../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "../services/common/kube-object.js";
import { parseVersion } from "../services/common/projection-version.js";
import { createExportController } from "../services/registrar/export/export-controller.js";
import { createAlwaysLeader } from "../services/registrar/export/leader-election.js";
import type { ConfigStore } from "../services/registrar/store/config-store.js";
import { createEtcdClient, createEtcdStore } from "../services/registrar/store/etcd-store.js";
import { originKeyPrefix } from "../services/registrar/store/store-key.js";
import { startAgentProcess } from "../test/support/agent-process.js";
import { freePort, startEtcd } from "../test/support/etcd.js";
import { startEtcdCluster } from "../test/support/etcd-cluster.js";
import { createMemoryObjectSource } from "../test/support/memory-source.js";
import { type RegistrarProcess, startRegistrarProcess } from "../test/support/registrar-process.js";
import { waitFor } from "../test/support/wait.js";
import { awaitChange } from "./await-change.js";
import type { BenchFlags } from "./bench-flags.js";
import { deployedNodeOptions } from "./deployed-node-options.js";
import { type HistogramTotals, histogramTotals, observedBetween } from "./hot-stats.js";
import { readMemory, sampleProcess } from "./proc-stats.js";
import {
  createScenario,
  meshManifests,
  meshObjects,
  routeObject,
  type Scenario,
  type ScenarioChange,
  serviceIndex,
} from "./scenario.js";
import { type LatencySummary, quantile, summarize } from "./stats.js";
import { createWorkerPool, type WorkerPool } from "./worker-pool.js";
import { preciseNow, type WorkerReport } from "./worker-protocol.js";

/** Everything one run measured (the raw JSON). */
export interface BenchResults {
  readonly startedAt: string;
  readonly machine: { cpus: number; node: string; etcd: string };
  readonly params: {
    services: number;
    agents: number;
    deps: number;
    changes: number;
    pollChanges: number;
    workers: number;
    seed: number;
    hot: number;
    etcdMembers: number;
  };
  readonly scenario: { popularServices: number; fanoutMean: number; fanoutMax: number };
  readonly coldExport: {
    spawnToAllMs: number;
    servingToAllMs: number;
    hubRssMb: number;
    hubPeakRssMb: number;
  };
  readonly listAll: Record<string, number>;
  readonly fleet: {
    agentsReadyMs: number;
    registrarRssMb: number;
    registrarPeakRssMb: number;
    workerRssMb: number[];
  };
  readonly propagation: {
    fromWrite: LatencySummary;
    fromEdit: LatencySummary;
    perAgentFromWrite: LatencySummary;
    popularFromWrite: LatencySummary;
    etcdWatch: LatencySummary;
    ratioP50: number;
    ratioP99: number;
    interestedBytesPerChange: number;
    interestedBytesPerDelivery: number;
    uninterestedBytesPerChange: number;
    uninterestedBytesTotal: number;
    uninterestedStrays: { change: number; service: string; agent: number; bytes: number }[];
    deliveries: number;
  };
  /**
   * The edits of the hot service (`--hot`): end to end (store put → every
   * agent applied), the registrar's share (its fan-out histogram) and the
   * agents' share (each agent's apply-delay histogram, per delivery).
   */
  readonly hot: {
    service: string | undefined;
    fromWrite: LatencySummary;
    registrar: LatencySummary;
    agent: LatencySummary;
  };
  readonly restart: {
    downMs: number;
    spawnToAllSyncedMs: number;
    servingToAllSyncedMs: number;
    syncedSpreadMs: LatencySummary;
    peakCpuPercent: number;
    peakRssMb: number;
  };
  readonly agent: { coldSyncMs: number; processColdStartMs: number; processRssMb: number };
  readonly poll: {
    intervalMs: number;
    fromWrite: LatencySummary;
    bytesPerAgentPerInterval: number;
  };
}

const ROOT = resolve(import.meta.dirname, "..");
const PREFIX = "/aether/v1";
const FLOOR_PREFIX = "/aether-bench/floor/";
/** Registrar keep-alive during the run: long, so no keep-alive falls into a measured window. */
const REGISTRAR_KEEPALIVE = "10m";
const AGENT_KEEPALIVE_TIMEOUT_MS = 30 * 60_000;
/** The agent's default poll interval (`--poll-interval`). */
const DEFAULT_POLL_INTERVAL_MS = 10_000;

/** The compiled mains, as the container image runs them (no tsx). */
export const REGISTRAR_JS = resolve(ROOT, "dist/services/registrar/main.js");
const AGENT_JS = resolve(ROOT, "dist/clients/agent/main.js");
/** The registrar's Deployment, whose Node options the registrar processes run with. */
export const REGISTRAR_MANIFEST = resolve(ROOT, "deploy/base/registrar-deployment.yaml");
/** The agent's DaemonSet, whose Node options the agent process runs with. */
const AGENT_MANIFEST = resolve(ROOT, "deploy/components/agent/agent-daemonset.yaml");

/** Compiles the registrar and agent mains into dist/ the way deploy/Dockerfile does. */
export function buildMains(): void {
  execFileSync(
    process.execPath,
    [
      resolve(ROOT, "node_modules/typescript/bin/tsc"),
      "-p",
      resolve(ROOT, "deploy/tsconfig.build.json"),
    ],
    { cwd: ROOT, stdio: "inherit" },
  );
}

/** Writes a progress line to stderr (stdout's last line is the JSON). */
export function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/**
 * Records when each agent applied each version of each service, from the
 * workers' reports. An agent that applied a newer version of a service than
 * the one waited for counts as having applied it (at the time it applied
 * the first version at or above it): when two edits of one service land
 * within one poll period, a polling agent skips straight to the newer one.
 */
export function createApplyLog(pool: WorkerPool) {
  /** service → agent → the versions it applied (nanoseconds) and when, in arrival order. */
  const applied = new Map<string, Map<number, { nanos: bigint; t: number }[]>>();
  let changed: (() => void) | undefined;
  pool.onReport((report: WorkerReport) => {
    if (report.type !== "applied") return;
    for (const item of report.items) {
      const nanos = parseVersion(item.version);
      if (nanos === undefined) continue;
      let byAgent = applied.get(item.service);
      if (byAgent === undefined) {
        byAgent = new Map();
        applied.set(item.service, byAgent);
      }
      const list = byAgent.get(item.id) ?? [];
      list.push({ nanos, t: item.t });
      byAgent.set(item.id, list);
    }
    changed?.();
  });
  /** When `agent` first applied `service` at `target` or above; undefined when it has not. */
  const appliedAt = (service: string, agent: number, target: bigint): number | undefined => {
    let first: number | undefined;
    for (const { nanos, t } of applied.get(service)?.get(agent) ?? []) {
      if (nanos >= target && (first === undefined || t < first)) first = t;
    }
    return first;
  };
  return {
    /**
     * Resolves with each interested agent's apply time once all of them
     * applied `service@version` or a newer version of it.
     */
    async waitAll(service: string, version: string, agents: readonly number[], timeoutMs: number) {
      const target = parseVersion(version);
      if (target === undefined) throw new Error(`${service}@${version}: not a version`);
      const done = () => agents.every((id) => appliedAt(service, id, target) !== undefined);
      await awaitChange(
        done,
        (check) => {
          changed = check;
        },
        timeoutMs,
        () => {
          const got = agents.filter((id) => appliedAt(service, id, target) !== undefined);
          return new Error(
            `${service}@${version}: ${got.length}/${agents.length} interested agents applied it (or a newer version) in ${timeoutMs} ms`,
          );
        },
      );
      return agents.map((id) => appliedAt(service, id, target) as number);
    },
  };
}

/** The export controller hosted by the benchmark, with the time of each of its store writes. */
function createTimedExport(endpoints: readonly string[], objects: KubeObject[]) {
  const store = createEtcdStore({ origin: "hub", endpoints: [...endpoints], prefix: PREFIX });
  const puts = new Map<string, { version: string; t: number }[]>();
  const record = (service: string, version: string, t: number): void => {
    const list = puts.get(service) ?? [];
    list.push({ version, t });
    puts.set(service, list);
  };
  // The write path the controller uses (batched writes, or single puts):
  // the moment it calls the store is the start of propagation.
  const timed = new Proxy(store, {
    get(target, property, receiver) {
      if (property === "put") {
        const put: ConfigStore["put"] = (projection, options) => {
          record(projection.service, projection.version, preciseNow());
          return target.put(projection, options);
        };
        return put;
      }
      if (property === "write") {
        const write: ConfigStore["write"] = (changes, options) => {
          const t = preciseNow();
          for (const change of changes) {
            if (change.type === "put")
              record(change.projection.service, change.projection.version, t);
          }
          return target.write(changes, options);
        };
        return write;
      }
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const source = createMemoryObjectSource(objects);
  const controller = createExportController({
    source,
    store: timed,
    origin: "hub",
    controlCluster: "hub",
    leadership: createAlwaysLeader(),
  });
  const routeAt = new Map<number, number>();
  objects.forEach((object, position) => {
    if (object.kind === "HTTPRoute")
      routeAt.set(serviceIndex(`x/${object.metadata?.name}`), position);
  });
  return {
    controller,
    /** Edits the service's route (edit number `edit`); resolves with when, and the put's version and time. */
    async edit(
      service: string,
      edit: number,
    ): Promise<{ tEdit: number; version: string; tPut: number }> {
      const index = serviceIndex(service);
      const position = routeAt.get(index) as number;
      objects[position] = routeObject(index, edit);
      const before = puts.get(service)?.length ?? 0;
      const tEdit = preciseNow();
      source.set(objects);
      await waitFor(
        () => (puts.get(service)?.length ?? 0) > before,
        30_000,
        `the export of ${service}`,
        1,
      );
      const put = (puts.get(service) as { version: string; t: number }[])[before] as {
        version: string;
        t: number;
      };
      return { tEdit, version: put.version, tPut: put.t };
    },
    /** How many puts were made so far. */
    putCount: () => [...puts.values()].reduce((n, l) => n + l.length, 0),
    async close() {
      await controller.stop();
      await store.close();
    },
  };
}

/** Where the bench's etcd runs: one member, or a cluster (`--etcd-members`). */
async function startBenchEtcd(members: number) {
  if (members === 1) {
    const single = await startEtcd();
    return { endpoints: [single.endpoint], stop: () => single.stop() };
  }
  const cluster = await startEtcdCluster({ size: members });
  return { endpoints: [...cluster.endpoints], stop: () => cluster.stop() };
}

/** The registrar's fan-out histogram totals, from its /metrics. */
async function fanoutTotals(registrar: RegistrarProcess): Promise<HistogramTotals | undefined> {
  const text = await (await fetch(`${registrar.adminUrl}/metrics`)).text();
  return histogramTotals(text, "aether_config_watch_fanout_seconds");
}

/** Sums the byte deltas of `agents` between two snapshots. */
function bytesBetween(
  before: Map<number, number>,
  after: Map<number, number>,
  agents: Iterable<number>,
): number {
  let sum = 0;
  for (const id of agents) sum += (after.get(id) ?? 0) - (before.get(id) ?? 0);
  return sum;
}

/**
 * Adds one hot change's shares: the registrar's fan-out (waited for: its
 * last write may be counted just after the last agent applied) and each
 * interested agent's apply delay, in ms, from the readings before it.
 */
async function hotShares(
  spoke: RegistrarProcess,
  pool: WorkerPool,
  before: { fanout: HistogramTotals | undefined; agents: Map<number, HistogramTotals> },
  interested: readonly number[],
  into: { registrar: number[]; agent: number[] },
): Promise<void> {
  let registrar: number | undefined;
  await waitFor(
    async () => {
      registrar = observedBetween(before.fanout, await fanoutTotals(spoke));
      return registrar !== undefined;
    },
    5_000,
    "the registrar's fan-out histogram to count the hot change",
    5,
  );
  into.registrar.push(registrar as number);
  const after = await pool.applyDelays();
  for (const id of interested) {
    const ms = observedBetween(before.agents.get(id), after.get(id));
    if (ms !== undefined) into.agent.push(ms);
  }
}

/** Runs every phase and returns the results. */
export async function runBench(flags: BenchFlags): Promise<BenchResults> {
  const startedAt = new Date().toISOString();
  const scenario: Scenario = createScenario({
    services: flags.services,
    agents: flags.agents,
    deps: flags.deps,
    changes: flags.changes + flags.pollChanges,
    seed: flags.seed,
    hot: flags.hot,
    hotSpan: flags.changes,
  });
  const watchChanges = scenario.changes.slice(0, flags.changes);
  const pollChanges = scenario.changes.slice(flags.changes);
  const fanouts = scenario.changes.map((c) => c.interested.length);
  const profileDir = resolve(ROOT, flags.resultsDir, "profiles");
  const nodeArgs = flags.cpuProf ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : [];
  if (flags.cpuProf) await mkdir(profileDir, { recursive: true });

  progress("compiling the registrar and agent (deploy/tsconfig.build.json → dist/)");
  buildMains();
  const work = await mkdtemp(join(tmpdir(), "aether-bench-"));
  const etcd = await startBenchEtcd(flags.etcdMembers);
  const etcdEndpoints = etcd.endpoints.join(",");
  const etcdClient = createEtcdClient(etcd.endpoints);
  const registrars: RegistrarProcess[] = [];
  let pool: WorkerPool | undefined;
  let exporter: ReturnType<typeof createTimedExport> | undefined;
  try {
    const etcdVersion = await fetch(`${etcd.endpoints[0]}/version`)
      .then((r) => r.json() as Promise<{ etcdserver?: string }>)
      .then((v) => v.etcdserver ?? "unknown");

    // 1. Cold export.
    progress(`cold export of ${flags.services} services (hub registrar, dir source)`);
    const manifests = join(work, "manifests");
    await mkdir(manifests);
    for (const [file, text] of meshManifests(flags.services))
      await writeFile(join(manifests, file), text);
    const hubKeys = originKeyPrefix(PREFIX, "hub");
    const countHub = () => etcdClient.getAll().prefix(hubKeys).count();
    const tSpawn = preciseNow();
    const storeArgs = [
      "--store",
      "etcd",
      "--etcd-endpoints",
      etcdEndpoints,
      "--control-cluster",
      "hub",
    ];
    // With the Node options of the shipped Deployment: its RSS is what a registrar pod uses.
    const env = { NODE_OPTIONS: await deployedNodeOptions(REGISTRAR_MANIFEST, "registrar") };
    const hub = await startRegistrarProcess(
      ["--cluster", "hub", ...storeArgs, "--export-source", `dir:${manifests}`],
      { nodeArgs, timeoutMs: 60_000, script: REGISTRAR_JS, env },
    );
    registrars.push(hub);
    const tServing = preciseNow();
    await waitFor(async () => (await countHub()) >= flags.services, 120_000, "the cold export", 20);
    const tExported = preciseNow();
    const hubMemory = readMemory(hub.pid);
    await hub.stop();
    const coldExport = {
      spawnToAllMs: tExported - tSpawn,
      servingToAllMs: tExported - tServing,
      hubRssMb: hubMemory?.rssMb ?? Number.NaN,
      hubPeakRssMb: hubMemory?.peakRssMb ?? Number.NaN,
    };
    progress(`cold export: ${(coldExport.spawnToAllMs / 1000).toFixed(2)} s from spawn`);

    // 2. The spoke registrar the agents use, and ListAllConfig.
    const spokePort = await freePort();
    const spokeArgs = [
      "--cluster",
      "spoke",
      ...storeArgs,
      "--keepalive",
      REGISTRAR_KEEPALIVE,
      "--listen",
      `127.0.0.1:${spokePort}`,
      // The bench measures capacity, not the production limits: room for every agent.
      "--max-watch-streams",
      String(Math.max(2_000, flags.agents * 2)),
      "--max-connections",
      String(Math.max(4_096, flags.agents * 2 + 64)),
    ];
    let spoke = await startRegistrarProcess(spokeArgs, {
      nodeArgs,
      timeoutMs: 60_000,
      script: REGISTRAR_JS,
      env,
    });
    registrars.push(spoke);
    await waitFor(
      async () => (await fetch(`${spoke.url}/readyz`)).ok,
      60_000,
      "the spoke registrar's readiness",
      20,
    );
    const listClient = createClient(
      ConfigService,
      createConnectTransport({ baseUrl: spoke.url, httpVersion: "2" }),
    );
    const listAllOnce = async (view: ConfigView, pageSize: number): Promise<number> => {
      const t0 = preciseNow();
      let pageToken = "";
      let count = 0;
      do {
        const page = await listClient.listAllConfig({ view, pageSize, pageToken });
        count += page.projections.length;
        pageToken = page.nextPageToken;
      } while (pageToken !== "");
      const ms = preciseNow() - t0;
      if (count < flags.services)
        throw new Error(`ListAllConfig returned ${count} of ${flags.services}`);
      return ms;
    };
    const listAll: Record<string, number> = {};
    for (const [name, view] of [
      ["effective", ConfigView.EFFECTIVE],
      ["allOrigins", ConfigView.ALL_ORIGINS],
    ] as const) {
      for (const pageSize of [100, 1000]) {
        const runs = [];
        for (let i = 0; i < 3; i++) runs.push(await listAllOnce(view, pageSize));
        listAll[`${name}Page${pageSize}Ms`] = Math.round(quantile(runs, 0.5) * 10) / 10;
      }
    }
    progress(`ListAllConfig: ${JSON.stringify(listAll)}`);

    // 3. The export controller of the edits, and the fleet.
    exporter = createTimedExport(etcd.endpoints, meshObjects(flags.services));
    exporter.controller.start();
    await exporter.controller.idle();
    await waitFor(
      () => exporter?.controller.status().reconciles !== 0,
      60_000,
      "the first reconcile",
    );
    await exporter.controller.idle();
    if (exporter.putCount() !== 0) {
      throw new Error(
        `the hosted exporter rewrote ${exporter.putCount()} projections the hub had exported`,
      );
    }
    pool = createWorkerPool(flags.workers, nodeArgs);
    const applyLog = createApplyLog(pool);
    progress(`starting ${flags.agents} agents in ${flags.workers} workers`);
    const tFleet = preciseNow();
    const readyAt = await pool.startAgents(spoke.url, scenario.agents, "watch", {
      keepaliveTimeoutMs: AGENT_KEEPALIVE_TIMEOUT_MS,
    });
    const agentsReadyMs = Math.max(...readyAt.values()) - tFleet;
    const spokeMemory = readMemory(spoke.pid);
    const fleet = {
      agentsReadyMs,
      registrarRssMb: spokeMemory?.rssMb ?? Number.NaN,
      registrarPeakRssMb: spokeMemory?.peakRssMb ?? Number.NaN,
      workerRssMb: pool.pids.map((pid) => readMemory(pid)?.rssMb ?? Number.NaN),
    };
    progress(
      `fleet ready in ${agentsReadyMs.toFixed(0)} ms; spoke registrar RSS ${fleet.registrarRssMb.toFixed(0)} MB`,
    );

    // 4. Propagation, interleaved with the floor.
    const floorSeen = new Map<string, number>();
    pool.onReport((report) => {
      if (report.type === "floor") floorSeen.set(report.key, report.t);
    });
    await pool.floorWatch(etcdEndpoints, FLOOR_PREFIX);
    const floorValue = Buffer.from(
      toBinary(
        ServiceConfigProjectionSchema,
        (
          await listClient.listConfig({
            services: [watchChanges[0]?.service ?? ""],
            originCluster: "hub",
          })
        ).projections[0] ?? ({} as never),
      ),
    );
    const fromWrite: number[] = [];
    const fromEdit: number[] = [];
    const perAgent: number[] = [];
    const popularFromWrite: number[] = [];
    const etcdWatch: number[] = [];
    const hotFromWrite: number[] = [];
    const hotRegistrar: number[] = [];
    const hotAgent: number[] = [];
    const allAgents = scenario.agents.map((a) => a.id);
    const snapshots: Map<number, number>[] = [];
    progress(`propagation: ${watchChanges.length} edits, each against a raw etcd put`);
    for (const [i, change] of watchChanges.entries()) {
      const key = `${FLOOR_PREFIX}${i}`;
      const tFloor = preciseNow();
      await etcdClient.put(key).value(floorValue);
      await waitFor(() => floorSeen.has(key), 10_000, `the floor watch event ${key}`, 0);
      etcdWatch.push((floorSeen.get(key) as number) - tFloor);

      const hotBefore = change.hot
        ? { fanout: await fanoutTotals(spoke), agents: await pool.applyDelays() }
        : undefined;
      snapshots.push(await pool.bytes());
      const { tEdit, version, tPut } = await exporter.edit(change.service, i + 1);
      const applied = await applyLog.waitAll(change.service, version, change.interested, 30_000);
      const last = Math.max(...applied);
      fromWrite.push(last - tPut);
      fromEdit.push(last - tEdit);
      for (const t of applied) perAgent.push(t - tPut);
      if (scenario.popular.includes(change.service)) popularFromWrite.push(last - tPut);
      if (hotBefore !== undefined) {
        hotFromWrite.push(last - tPut);
        await hotShares(spoke, pool, hotBefore, change.interested, {
          registrar: hotRegistrar,
          agent: hotAgent,
        });
      }
    }
    // A last window for bytes that would arrive late.
    await new Promise((ok) => setTimeout(ok, 1_000));
    snapshots.push(await pool.bytes());
    let interestedBytes = 0;
    let uninterestedBytes = 0;
    let deliveries = 0;
    /** Uninterested agents that read bytes in a change's window (the first 20), to explain a non-zero total. */
    const strays: { change: number; service: string; agent: number; bytes: number }[] = [];
    watchChanges.forEach((change: ScenarioChange, i) => {
      const before = snapshots[i] as Map<number, number>;
      const after = snapshots[i + 1] as Map<number, number>;
      const interested = new Set(change.interested);
      interestedBytes += bytesBetween(before, after, interested);
      for (const id of allAgents) {
        if (interested.has(id)) continue;
        const bytes = (after.get(id) ?? 0) - (before.get(id) ?? 0);
        if (bytes === 0) continue;
        uninterestedBytes += bytes;
        if (strays.length < 20)
          strays.push({ change: i, service: change.service, agent: id, bytes });
      }
      deliveries += interested.size;
    });
    const hot = {
      service: scenario.hot,
      fromWrite: summarize(hotFromWrite),
      registrar: summarize(hotRegistrar),
      agent: summarize(hotAgent),
    };
    if (scenario.hot !== undefined) {
      progress(
        `hot ${scenario.hot}: p50 ${hot.fromWrite.p50} ms p99 ${hot.fromWrite.p99} ms; registrar p99 ${hot.registrar.p99} ms; agent p99 ${hot.agent.p99} ms`,
      );
    }
    const ratio = (q: number) =>
      Math.round((quantile(fromWrite, q) / quantile(etcdWatch, q)) * 100) / 100;
    const propagation = {
      fromWrite: summarize(fromWrite),
      fromEdit: summarize(fromEdit),
      perAgentFromWrite: summarize(perAgent),
      popularFromWrite: summarize(popularFromWrite),
      etcdWatch: summarize(etcdWatch),
      ratioP50: ratio(0.5),
      ratioP99: ratio(0.99),
      interestedBytesPerChange: Math.round(interestedBytes / Math.max(1, watchChanges.length)),
      interestedBytesPerDelivery: Math.round(interestedBytes / Math.max(1, deliveries)),
      uninterestedBytesPerChange: uninterestedBytes / Math.max(1, watchChanges.length),
      uninterestedBytesTotal: uninterestedBytes,
      uninterestedStrays: strays,
      deliveries,
    };
    progress(
      `propagation p50 ${propagation.fromWrite.p50} ms p99 ${propagation.fromWrite.p99} ms; etcd p50 ${propagation.etcdWatch.p50} p99 ${propagation.etcdWatch.p99}`,
    );
    const steadyMemory = readMemory(spoke.pid);
    if (steadyMemory !== undefined) {
      Object.assign(fleet, {
        registrarRssMb: Math.max(fleet.registrarRssMb, steadyMemory.rssMb),
        registrarPeakRssMb: steadyMemory.peakRssMb,
      });
    }

    // 5. Registrar restart with the fleet reconnecting.
    progress("restarting the spoke registrar");
    const synced = new Map<number, number>();
    const offSynced = pool.onReport((report) => {
      if (report.type === "synced") for (const item of report.items) synced.set(item.id, item.t);
    });
    pool.markResync();
    await new Promise((ok) => setTimeout(ok, 100));
    const tDown = preciseNow();
    await spoke.stop();
    const tRespawn = preciseNow();
    spoke = await startRegistrarProcess(spokeArgs, {
      nodeArgs,
      timeoutMs: 60_000,
      script: REGISTRAR_JS,
      env,
    });
    registrars.push(spoke);
    const tRestartServing = preciseNow();
    const sampler = sampleProcess(spoke.pid, 100);
    await waitFor(() => synced.size === flags.agents, 60_000, "every agent to resync", 10);
    const tAllSynced = Math.max(...synced.values());
    const sample = sampler.stop();
    offSynced();
    const restart = {
      downMs: tRespawn - tDown,
      spawnToAllSyncedMs: tAllSynced - tRespawn,
      servingToAllSyncedMs: tAllSynced - tRestartServing,
      syncedSpreadMs: summarize([...synced.values()].map((t) => t - tRestartServing)),
      peakCpuPercent: Math.round(sample.peakCpuPercent),
      peakRssMb: Math.round(sample.peakRssMb * 10) / 10,
    };
    progress(
      `resync: all ${flags.agents} agents ${restart.servingToAllSyncedMs.toFixed(0)} ms after the registrar served`,
    );

    // 6. Cold sync and one real agent process.
    const probeDeps = scenario.agents[0]?.deps ?? [];
    const coldSyncMs = await pool.coldSync(probeDeps);
    const tAgentSpawn = preciseNow();
    const agentProcess = await startAgentProcess(
      [
        "--registrar",
        spoke.url,
        "--cluster",
        "bench-spoke",
        "--control-cluster",
        "hub",
        "--deps",
        probeDeps.join(","),
        "--cache-dir",
        join(work, "agent-cache"),
      ],
      // With the Node options of the shipped DaemonSet: its RSS is what a node pays.
      {
        script: AGENT_JS,
        env: { NODE_OPTIONS: await deployedNodeOptions(AGENT_MANIFEST, "agent") },
      },
    );
    await agentProcess.waitUntilReady(30_000);
    const processColdStartMs = preciseNow() - tAgentSpawn;
    // Let it settle (the cache written, the first GC done) before reading its memory.
    await new Promise((ok) => setTimeout(ok, 2_000));
    const agentMemory = readMemory(agentProcess.pid);
    await agentProcess.stop();
    const agent = {
      coldSyncMs: Math.round(coldSyncMs * 10) / 10,
      processColdStartMs: Math.round(processColdStartMs),
      processRssMb: Math.round((agentMemory?.rssMb ?? Number.NaN) * 10) / 10,
    };

    // 7. The polling baseline.
    let poll: BenchResults["poll"] = {
      intervalMs: DEFAULT_POLL_INTERVAL_MS,
      fromWrite: summarize([]),
      bytesPerAgentPerInterval: Number.NaN,
    };
    if (pollChanges.length > 0) {
      progress(
        `polling baseline: ${pollChanges.length} edits, agents polling every ${DEFAULT_POLL_INTERVAL_MS} ms`,
      );
      await pool.stopAgents();
      await pool.startAgents(spoke.url, scenario.agents, "poll", {
        keepaliveTimeoutMs: AGENT_KEEPALIVE_TIMEOUT_MS,
      });
      const bytesStart = await pool.bytes();
      const tPollStart = preciseNow();
      const issued: { change: ScenarioChange; version: string; tPut: number }[] = [];
      for (const [j, change] of pollChanges.entries()) {
        const { version, tPut } = await exporter.edit(change.service, 10_000 + j);
        issued.push({ change, version, tPut });
        await new Promise((ok) => setTimeout(ok, 250));
      }
      const pollFromWrite: number[] = [];
      for (const { change, version, tPut } of issued) {
        const applied = await applyLog.waitAll(
          change.service,
          version,
          change.interested,
          3 * DEFAULT_POLL_INTERVAL_MS + 10_000,
        );
        pollFromWrite.push(Math.max(...applied) - tPut);
      }
      const bytesEnd = await pool.bytes();
      const intervals = (preciseNow() - tPollStart) / DEFAULT_POLL_INTERVAL_MS;
      poll = {
        intervalMs: DEFAULT_POLL_INTERVAL_MS,
        fromWrite: summarize(pollFromWrite),
        bytesPerAgentPerInterval: Math.round(
          bytesBetween(bytesStart, bytesEnd, allAgents) / flags.agents / Math.max(1, intervals),
        ),
      };
      progress(`polling: p50 ${poll.fromWrite.p50} ms p99 ${poll.fromWrite.p99} ms`);
    }
    await pool.stopAgents();

    return {
      startedAt,
      machine: {
        cpus: (await import("node:os")).cpus().length,
        node: process.version,
        etcd: etcdVersion,
      },
      params: {
        services: flags.services,
        agents: flags.agents,
        deps: flags.deps,
        changes: watchChanges.length,
        pollChanges: pollChanges.length,
        workers: flags.workers,
        seed: flags.seed,
        hot: flags.hot,
        etcdMembers: flags.etcdMembers,
      },
      scenario: {
        popularServices: scenario.popular.length,
        fanoutMean:
          Math.round((fanouts.reduce((a, b) => a + b, 0) / Math.max(1, fanouts.length)) * 10) / 10,
        fanoutMax: Math.max(0, ...fanouts),
      },
      coldExport,
      listAll,
      fleet,
      propagation,
      hot,
      restart,
      agent,
      poll,
    };
  } finally {
    await pool?.close().catch(() => undefined);
    await exporter?.close().catch(() => undefined);
    for (const registrar of registrars) await registrar.kill().catch(() => undefined);
    etcdClient.close();
    await etcd.stop();
    await rm(work, { recursive: true, force: true });
  }
}
