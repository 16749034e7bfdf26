/**
 * One leg of the signing benchmark (see run-signing-bench.ts), unsigned or
 * signed, on its own fresh etcd, registrar processes and agent workers, so
 * the two legs differ by signatures only:
 *
 * 1. **Cold export**: the hub registrar (`--export-source dir:`, and
 *    `--signing-key-file` when signed) from spawn until etcd holds all N
 *    projections; its CPU time then. Then the stored bytes per value.
 * 2. **Spoke**: a spoke registrar (`--origin-keys --require-signatures`
 *    when signed) from spawn until one ListAllConfig through it returned
 *    all N; its CPU time then; and a second, warm ListAllConfig.
 * 3. **Edits**: M real agents in worker processes on the spoke (verifying
 *    end to end with `--origin-keys --require-signatures` when signed), C
 *    route edits through the hub's manifest directory (edit-phase.ts); the
 *    CPU the workers, the spoke and the hub used meanwhile.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ConfigService, ConfigView } from "../../gen/aether/registry/v1/config_service_pb.js";
import { splitStoredValue } from "../../services/common/projection-signature.js";
import { createEtcdClient } from "../../services/registrar/store/etcd-store.js";
import { originKeyPrefix } from "../../services/registrar/store/store-key.js";
import { type EtcdHandle, startEtcd } from "../../test/support/etcd.js";
import {
  type RegistrarProcess,
  startRegistrarProcess,
} from "../../test/support/registrar-process.js";
import { waitFor } from "../../test/support/wait.js";
import { readCpuSeconds } from "../proc-stats.js";
import { progress, REGISTRAR_JS } from "../run-bench.js";
import { meshManifests, type Scenario } from "../scenario.js";
import { type LatencySummary, summarize } from "../stats.js";
import { createWorkerPool, type WorkerPool } from "../worker-pool.js";
import { preciseNow } from "../worker-protocol.js";
import type { BenchKeys } from "./bench-keys.js";
import { createAppliedLog, runEdits } from "./edit-phase.js";

/** What one leg measured. */
export interface SigningLeg {
  readonly signed: boolean;
  /** The 1-minute load average when the leg started. */
  readonly loadAverage: number;
  readonly coldExport: { spawnToAllMs: number; hubCpuS: number };
  /** The hub's stored values: their mean size, and how many carry a signature. */
  readonly stored: { values: number; meanBytes: number; signedValues: number };
  readonly spoke: { spawnToServedMs: number; cpuS: number; warmListAllMs: number };
  readonly edits: {
    readonly editToAllApplied: LatencySummary;
    readonly agentsReadyMs: number;
    /** CPU seconds used during the edits by the agent workers (all of them), the spoke and the hub. */
    readonly agentCpuS: number;
    readonly spokeCpuS: number;
    readonly hubCpuS: number;
  };
  /** One of the hub's unsigned stored values (the in-process figures sign it), unsigned leg only. */
  readonly sampleValue?: Uint8Array;
}

/** What every leg is given. */
export interface LegSetup {
  readonly services: number;
  readonly agents: number;
  readonly workers: number;
  readonly scenario: Scenario;
  /** The changes of the edit phase. */
  readonly changes: Scenario["changes"];
  /** A fresh directory of the leg's own. */
  readonly dir: string;
  /** `--cpu-prof` node options for the process named; [] without it. */
  readonly profile: (name: string) => string[];
}

const PREFIX = "/aether/v1";
const KEEPALIVE_TIMEOUT_MS = 30 * 60_000;
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Runs one leg: signed when `keys` is given. */
export async function runSigningLeg(
  setup: LegSetup,
  keys: BenchKeys | undefined,
  loadAverage: number,
): Promise<SigningLeg> {
  const name = keys === undefined ? "unsigned" : "signed";
  const etcd = await startEtcd();
  const registrars: RegistrarProcess[] = [];
  let pool: WorkerPool | undefined;
  try {
    const manifests = join(setup.dir, "manifests");
    await mkdir(manifests, { recursive: true });
    for (const [file, text] of meshManifests(setup.services)) {
      await writeFile(join(manifests, file), text);
    }
    const storeArgs = [
      ...["--store", "etcd", "--etcd-endpoints", etcd.endpoint, "--control-cluster", "hub"],
    ];
    progress(`${name}: cold export of ${setup.services} services`);
    const tSpawn = preciseNow();
    const hub = await startRegistrarProcess(
      [
        ...["--cluster", "hub", ...storeArgs, "--export-source", `dir:${manifests}`],
        ...(keys === undefined ? [] : ["--signing-key-file", keys.keyFile]),
      ],
      { nodeArgs: setup.profile(`hub-${name}`), timeoutMs: 60_000, script: REGISTRAR_JS },
    );
    registrars.push(hub);
    const coldExport = await awaitExport(etcd, setup.services, hub.pid, tSpawn);
    const stored = await readStored(etcd);
    progress(
      `${name}: exported in ${coldExport.spawnToAllMs} ms (hub CPU ${coldExport.hubCpuS} s), ${stored.meanBytes} bytes per value`,
    );
    const tSpoke = preciseNow();
    const spoke = await startRegistrarProcess(
      [
        ...["--cluster", "spoke", ...storeArgs, "--keepalive", "10m"],
        ...["--max-watch-streams", String(Math.max(2_000, setup.agents * 2))],
        ...["--max-connections", String(Math.max(4_096, setup.agents * 2 + 64))],
        ...(keys === undefined
          ? []
          : ["--origin-keys", keys.originKeysFile, "--require-signatures"]),
      ],
      { nodeArgs: setup.profile(`spoke-${name}`), timeoutMs: 60_000, script: REGISTRAR_JS },
    );
    registrars.push(spoke);
    const spokeFigures = await measureSpoke(spoke, setup.services, tSpoke);
    progress(
      `${name}: spoke served all in ${spokeFigures.spawnToServedMs} ms (CPU ${spokeFigures.cpuS} s)`,
    );

    pool = createWorkerPool(setup.workers, setup.profile(`workers-${name}`));
    const edits = await measureEdits(setup, pool, spoke, hub, keys, manifests);
    progress(
      `${name}: edits p50 ${edits.editToAllApplied.p50} ms p99 ${edits.editToAllApplied.p99} ms; agent CPU ${edits.agentCpuS} s`,
    );
    return {
      signed: keys !== undefined,
      loadAverage,
      coldExport,
      stored: {
        values: stored.values,
        meanBytes: stored.meanBytes,
        signedValues: stored.signedValues,
      },
      spoke: spokeFigures,
      edits,
      ...(keys === undefined ? { sampleValue: stored.sample } : {}),
    };
  } finally {
    await pool?.close().catch(() => undefined);
    for (const registrar of registrars) await registrar.stop().catch(() => undefined);
    await etcd.stop();
  }
}

/** Waits until etcd holds the hub's `services` projections; the wall time from `tSpawn`, and the hub's CPU. */
async function awaitExport(
  etcd: EtcdHandle,
  services: number,
  hubPid: number,
  tSpawn: number,
): Promise<SigningLeg["coldExport"]> {
  const client = createEtcdClient([etcd.endpoint]);
  try {
    const hubKeys = originKeyPrefix(PREFIX, "hub");
    await waitFor(
      async () => (await client.getAll().prefix(hubKeys).count()) >= services,
      180_000,
      "the cold export",
      20,
    );
    const spawnToAllMs = Math.round(preciseNow() - tSpawn);
    return { spawnToAllMs, hubCpuS: round(readCpuSeconds(hubPid) ?? Number.NaN, 2) };
  } finally {
    client.close();
  }
}

/** The hub's stored values: how many, their mean size, how many are signed, and one of them. */
async function readStored(etcd: EtcdHandle) {
  const client = createEtcdClient([etcd.endpoint]);
  try {
    const values = Object.values(
      await client.getAll().prefix(originKeyPrefix(PREFIX, "hub")).buffers(),
    );
    const bytes = values.reduce((sum, v) => sum + v.length, 0);
    const signedValues = values.filter((v) => splitStoredValue(v).signature !== undefined).length;
    return {
      values: values.length,
      meanBytes: round(bytes / Math.max(1, values.length)),
      signedValues,
      sample: new Uint8Array(values[0] ?? []),
    };
  } finally {
    client.close();
  }
}

/**
 * From the spoke's spawn (`tSpawn`) until one ListAllConfig through it
 * (page size 1000, as the agent lists) returned all `services`; its CPU
 * then; and the time of one more ListAllConfig, warm.
 */
async function measureSpoke(
  spoke: RegistrarProcess,
  services: number,
  tSpawn: number,
): Promise<SigningLeg["spoke"]> {
  const client = createClient(
    ConfigService,
    createConnectTransport({ baseUrl: spoke.url, httpVersion: "2" }),
  );
  const listAll = async (): Promise<number> => {
    let pageToken = "";
    let count = 0;
    do {
      const page = await client.listAllConfig({
        view: ConfigView.EFFECTIVE,
        pageSize: 1000,
        pageToken,
      });
      count += page.projections.length;
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    return count;
  };
  await waitFor(
    async () => (await fetch(`${spoke.url}/readyz`)).ok && (await listAll()) >= services,
    180_000,
    "the spoke serving every projection",
    20,
  );
  const spawnToServedMs = Math.round(preciseNow() - tSpawn);
  const cpuS = round(readCpuSeconds(spoke.pid) ?? Number.NaN, 2);
  const t0 = preciseNow();
  const count = await listAll();
  if (count < services) throw new Error(`the spoke listed ${count} of ${services}`);
  return { spawnToServedMs, cpuS, warmListAllMs: Math.round(preciseNow() - t0) };
}

/** Sum of the CPU seconds of `pids` so far. */
const cpuOf = (pids: readonly number[]): number =>
  pids.reduce((sum, pid) => sum + (readCpuSeconds(pid) ?? Number.NaN), 0);

/** Starts the fleet on the spoke, makes the edits, and measures them and the CPU they cost. */
async function measureEdits(
  setup: LegSetup,
  pool: WorkerPool,
  spoke: RegistrarProcess,
  hub: RegistrarProcess,
  keys: BenchKeys | undefined,
  manifests: string,
): Promise<SigningLeg["edits"]> {
  const log = createAppliedLog(pool);
  try {
    progress(`starting ${setup.agents} agents in ${setup.workers} workers`);
    const tFleet = preciseNow();
    const readyAt = await pool.startAgents(spoke.url, setup.scenario.agents, "watch", {
      keepaliveTimeoutMs: KEEPALIVE_TIMEOUT_MS,
      ...(keys === undefined
        ? {}
        : { signatures: { originKeysFile: keys.originKeysFile, require: true } }),
    });
    const agentsReadyMs = Math.round(Math.max(...readyAt.values()) - tFleet);
    progress(`${setup.changes.length} edits through the hub's manifests`);
    const before = { agents: cpuOf(pool.pids), spoke: cpuOf([spoke.pid]), hub: cpuOf([hub.pid]) };
    const latencies = await runEdits(manifests, setup.services, setup.changes, log);
    const agentCpuS = round(cpuOf(pool.pids) - before.agents, 2);
    const spokeCpuS = round(cpuOf([spoke.pid]) - before.spoke, 2);
    const hubCpuS = round(cpuOf([hub.pid]) - before.hub, 2);
    await pool.stopAgents();
    return {
      editToAllApplied: summarize(latencies),
      agentsReadyMs,
      agentCpuS,
      spokeCpuS,
      hubCpuS,
    };
  } finally {
    log.close();
  }
}
