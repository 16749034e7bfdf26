/**
 * One leg of the signing benchmark (see run-signing-bench.ts), unsigned or
 * signed: an export round (export-round.ts) whose processes stay up, then
 * M real agents in worker processes on its spoke (verifying end to end with
 * `--origin-keys --require-signatures` when signed) and C route edits
 * through the hub's manifest directory (edit-phase.ts), with the CPU the
 * workers, the spoke and the hub used meanwhile. The cold export and spoke
 * figures are the medians of this round and the leg's earlier ones.
 */

import { setTimeout as delay } from "node:timers/promises";
import type { RegistrarProcess } from "../../test/support/registrar-process.js";
import { readCpuSeconds } from "../proc-stats.js";
import { progress } from "../run-bench.js";
import type { Scenario } from "../scenario.js";
import { type LatencySummary, quantile, summarize } from "../stats.js";
import { createWorkerPool, type WorkerPool } from "../worker-pool.js";
import { preciseNow } from "../worker-protocol.js";
import type { BenchKeys } from "./bench-keys.js";
import { createAppliedLog, runEdits } from "./edit-phase.js";
import { type RoundFigures, type RoundSetup, startExportRound } from "./export-round.js";

/** What one leg measured. */
export interface SigningLeg {
  readonly signed: boolean;
  /** The 1-minute load average when the leg's own round started. */
  readonly loadAverage: number;
  /** The medians over `rounds`. */
  readonly coldExport: RoundFigures["coldExport"];
  readonly spoke: RoundFigures["spoke"];
  /** Every export round of this leg, the earlier ones first, the leg's own last. */
  readonly rounds: readonly RoundFigures[];
  /** The hub's stored values: their mean size, and how many carry a signature. */
  readonly stored: { values: number; meanBytes: number; signedValues: number };
  readonly edits: {
    readonly editToAllApplied: LatencySummary;
    readonly agentsReadyMs: number;
    /** CPU seconds used during the edits by the agent workers (all of them), the spoke and the hub. */
    readonly agentCpuS: number;
    /** How long the edits took (s). */
    readonly editSeconds: number;
    /**
     * The workers' CPU rate with every agent up and nothing changing, over
     * {@link IDLE_MS} before the edits (ms of CPU per second): what the
     * agents spend without any edit (timers, the keys file's re-stat).
     */
    readonly idleAgentCpuMsPerS: number;
    readonly spokeCpuS: number;
    readonly hubCpuS: number;
  };
  /** One of the hub's unsigned stored values (the in-process figures sign it), unsigned leg only. */
  readonly sampleValue?: Uint8Array;
}

/** What every leg is given. */
export interface LegSetup extends RoundSetup {
  readonly workers: number;
  readonly scenario: Scenario;
  /** The changes of the edit phase. */
  readonly changes: Scenario["changes"];
}

const KEEPALIVE_TIMEOUT_MS = 30 * 60_000;
/** The idle window before the edits, in which the agents' CPU rate without edits is taken. */
export const IDLE_MS = 10_000;
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const median = (values: number[]) => quantile(values, 0.5);

/** The median of each figure over `rounds`. */
export function medianFigures(rounds: readonly RoundFigures[]): RoundFigures {
  return {
    coldExport: {
      spawnToAllMs: median(rounds.map((r) => r.coldExport.spawnToAllMs)),
      hubCpuS: median(rounds.map((r) => r.coldExport.hubCpuS)),
    },
    spoke: {
      spawnToServedMs: median(rounds.map((r) => r.spoke.spawnToServedMs)),
      cpuS: median(rounds.map((r) => r.spoke.cpuS)),
      warmListAllMs: median(rounds.map((r) => r.spoke.warmListAllMs)),
    },
  };
}

/** Runs one leg (signed when `keys` is given) after its `earlier` rounds. */
export async function runSigningLeg(
  setup: LegSetup,
  keys: BenchKeys | undefined,
  loadAverage: number,
  earlier: readonly RoundFigures[],
): Promise<SigningLeg> {
  const name = keys === undefined ? "unsigned" : "signed";
  const exported = await startExportRound(setup, keys);
  const pool = createWorkerPool(setup.workers, setup.profile(`workers-${name}`));
  try {
    const edits = await measureEdits(setup, pool, exported, keys);
    progress(
      `${name}: edits p50 ${edits.editToAllApplied.p50} ms p99 ${edits.editToAllApplied.p99} ms; agent CPU ${edits.agentCpuS} s`,
    );
    const rounds = [...earlier, exported.figures];
    const { stored } = exported;
    return {
      signed: keys !== undefined,
      loadAverage,
      ...medianFigures(rounds),
      rounds,
      stored: {
        values: stored.values,
        meanBytes: stored.meanBytes,
        signedValues: stored.signedValues,
      },
      edits,
      ...(keys === undefined ? { sampleValue: stored.sample } : {}),
    };
  } finally {
    await pool.close().catch(() => undefined);
    await exported.stop();
  }
}

/** Sum of the CPU seconds of `pids` so far. */
const cpuOf = (pids: readonly number[]): number =>
  pids.reduce((sum, pid) => sum + (readCpuSeconds(pid) ?? Number.NaN), 0);

/** Starts the fleet on the spoke, makes the edits, and measures them and the CPU they cost. */
async function measureEdits(
  setup: LegSetup,
  pool: WorkerPool,
  exported: { hub: RegistrarProcess; spoke: RegistrarProcess; manifests: string },
  keys: BenchKeys | undefined,
): Promise<SigningLeg["edits"]> {
  const { hub, spoke, manifests } = exported;
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
    progress(
      `${IDLE_MS / 1000} s idle, then ${setup.changes.length} edits through the hub's manifests`,
    );
    const idleStart = { cpu: cpuOf(pool.pids), t: preciseNow() };
    await delay(IDLE_MS);
    const idleAgentCpuMsPerS = round(
      ((cpuOf(pool.pids) - idleStart.cpu) * 1e6) / (preciseNow() - idleStart.t),
    );
    const before = { agents: cpuOf(pool.pids), spoke: cpuOf([spoke.pid]), hub: cpuOf([hub.pid]) };
    const tEdits = preciseNow();
    const latencies = await runEdits(manifests, setup.services, setup.changes, log);
    const editSeconds = round((preciseNow() - tEdits) / 1000);
    const agentCpuS = round(cpuOf(pool.pids) - before.agents, 2);
    const spokeCpuS = round(cpuOf([spoke.pid]) - before.spoke, 2);
    const hubCpuS = round(cpuOf([hub.pid]) - before.hub, 2);
    await pool.stopAgents();
    return {
      editToAllApplied: summarize(latencies),
      agentsReadyMs,
      agentCpuS,
      editSeconds,
      idleAgentCpuMsPerS,
      spokeCpuS,
      hubCpuS,
    };
  } finally {
    log.close();
  }
}
