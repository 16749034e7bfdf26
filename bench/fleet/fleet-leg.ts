/**
 * One leg of the fleet benchmark (see run-fleet-bench.ts), reporting off or
 * on: its processes (fleet-mesh.ts), M real agents in worker processes on
 * the spoke, each with its own agent id, whose counted client has
 * `reportAppliedConfig` only when reporting is on; an idle window (what the
 * fleet costs with nothing changing), then the burst (burst.ts), with the
 * spoke's and the hub's CPU, the agents' CPU, the store writes by kind
 * (write-counter.ts) and the reports the spoke received over each window.
 */
import { setTimeout as delay } from "node:timers/promises";
import { readCpuSeconds } from "../proc-stats.js";
import { createApplyLog, progress } from "../run-bench.js";
import type { Scenario } from "../scenario.js";
import type { LatencySummary } from "../stats.js";
import { createWorkerPool } from "../worker-pool.js";
import { preciseNow } from "../worker-protocol.js";
import { runBurst } from "./burst.js";
import { planBurst } from "./burst-plan.js";
import { FLEET_PREFIX, type FleetMeshSetup, startFleetMesh } from "./fleet-mesh.js";
import { type ReportCounts, reportsBetween, scrapeReports } from "./fleet-metrics.js";
import { countsBetween, openWriteCounter, type WriteCounts } from "./write-counter.js";

/** What one window (idle, or the burst) measured. */
export interface FleetWindow {
  /** Its length (s). */
  readonly seconds: number;
  readonly spokeCpuS: number;
  readonly spokeCpuMsPerS: number;
  readonly hubCpuS: number;
  readonly hubCpuMsPerS: number;
  /** The agent workers' CPU, all of them (s). */
  readonly agentCpuS: number;
  /** Store writes (put and delete events under `<prefix>/clusters/`) by key kind. */
  readonly writes: WriteCounts;
  /** Config and status (header + service) writes per second. */
  readonly configWritesPerS: number;
  readonly statusWritesPerS: number;
  /** The reports the spoke received in the window, by result; `reportingAgents` at its end. */
  readonly reports: ReportCounts;
  readonly reportsPerS: number;
}

/** What one leg measured. */
export interface FleetLeg {
  readonly reporting: boolean;
  /** The 1-minute load average at the leg's start. */
  readonly loadAverage: number;
  readonly agentsReadyMs: number;
  readonly idle: FleetWindow;
  readonly burst: FleetWindow & {
    /** Manifest writes made (one per edit), in how long (ms). */
    readonly edits: number;
    readonly editingMs: number;
    /** Distinct services edited. */
    readonly services: number;
    /** First edit → every interested agent applied every edited service's final version (ms). */
    readonly allAppliedMs: number;
    /** Per edited service: its last edit's write → every interested agent applied its final version. */
    readonly serviceToAllApplied: LatencySummary;
    /**
     * After all applied, how long the window went on (ms): at least the
     * settle time, then until the spoke's accepted reports stood still for
     * {@link QUIET_MS} (the reports of the burst arrived), at most {@link MAX_TAIL_MS}.
     */
    readonly tailMs: number;
    readonly settleMs: number;
    /**
     * Reports the spoke received in the {@link LATE_MS} after the window
     * (late ones of the burst: a report is sent once the agent applied, and
     * is not awaited).
     */
    readonly lateReports: number;
    readonly lateMs: number;
  };
}

/** What every leg is given. */
export interface FleetLegSetup extends FleetMeshSetup {
  readonly workers: number;
  readonly scenario: Scenario;
  /** The window with every agent up and nothing changing (ms). */
  readonly idleMs: number;
  /** After all applied, the burst window goes on this long (ms). */
  readonly settleMs: number;
}

const KEEPALIVE_TIMEOUT_MS = 30 * 60_000;
/** How long after the burst window the late reports are counted (ms). */
export const LATE_MS = 5_000;
/** The burst's reports are in once the spoke accepted none for this long (ms). */
export const QUIET_MS = 1_000;
/** The longest the burst window goes on after all applied (ms). */
export const MAX_TAIL_MS = 60_000;
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const cpuOf = (pids: readonly number[]): number =>
  pids.reduce((sum, pid) => sum + (readCpuSeconds(pid) ?? Number.NaN), 0);

/**
 * Waits `settleMs`, then until the spoke's accepted reports (changes, not
 * the unchanged heartbeats) did not move for {@link QUIET_MS}, or
 * {@link MAX_TAIL_MS} in all.
 */
async function awaitReportsQuiet(url: string, settleMs: number): Promise<void> {
  const start = preciseNow();
  await delay(settleMs);
  let previous = (await scrapeReports(url)).byResult.accepted ?? 0;
  while (preciseNow() - start < MAX_TAIL_MS) {
    await delay(QUIET_MS);
    const accepted = (await scrapeReports(url)).byResult.accepted ?? 0;
    if (accepted === previous) return;
    previous = accepted;
  }
}

/** Runs one leg (agents reporting when `reporting`). */
export async function runFleetLeg(
  setup: FleetLegSetup,
  reporting: boolean,
  loadAverage: number,
): Promise<FleetLeg> {
  const name = reporting ? "reporting" : "silent";
  const mesh = await startFleetMesh(setup, name);
  const pool = createWorkerPool(setup.workers, setup.profile(`workers-${name}`));
  const counter = await openWriteCounter(mesh.etcd.endpoint, FLEET_PREFIX, "hub");
  const log = createApplyLog(pool);
  try {
    progress(`${name}: starting ${setup.agents} agents in ${setup.workers} workers`);
    const tFleet = preciseNow();
    const readyAt = await pool.startAgents(mesh.spoke.url, setup.scenario.agents, "watch", {
      keepaliveTimeoutMs: KEEPALIVE_TIMEOUT_MS,
      timeoutMs: 600_000,
      report: reporting,
    });
    const agentsReadyMs = Math.round(Math.max(...readyAt.values()) - tFleet);
    // Let the agents' first reports land before the idle window.
    await delay(setup.settleMs);
    const sample = async () => ({
      t: preciseNow(),
      spoke: cpuOf([mesh.spoke.pid]),
      hub: cpuOf([mesh.hub.pid]),
      agents: cpuOf(pool.pids),
      writes: counter.counts(),
      reports: await scrapeReports(mesh.spoke.url),
    });
    type Sample = Awaited<ReturnType<typeof sample>>;
    const window = (a: Sample, b: Sample): FleetWindow => {
      const seconds = (b.t - a.t) / 1000;
      const writes = countsBetween(a.writes, b.writes);
      const reports = reportsBetween(a.reports, b.reports);
      return {
        seconds: round(seconds, 2),
        spokeCpuS: round(b.spoke - a.spoke, 2),
        spokeCpuMsPerS: round(((b.spoke - a.spoke) * 1000) / seconds),
        hubCpuS: round(b.hub - a.hub, 2),
        hubCpuMsPerS: round(((b.hub - a.hub) * 1000) / seconds),
        agentCpuS: round(b.agents - a.agents, 2),
        writes,
        configWritesPerS: round(writes.config / seconds),
        statusWritesPerS: round((writes.statusReplica + writes.statusService) / seconds),
        reports,
        reportsPerS: round(reports.total / seconds),
      };
    };
    progress(
      `${name}: ${setup.idleMs / 1000} s idle, then a burst of ${setup.scenario.changes.length} edits`,
    );
    const idleStart = await sample();
    await delay(setup.idleMs);
    const idleEnd = await sample();
    const plan = planBurst(setup.services, setup.scenario.changes);
    const burstStart = await sample();
    const result = await runBurst(mesh.manifests, plan, counter, log);
    await awaitReportsQuiet(mesh.spoke.url, setup.settleMs);
    const burstEnd = await sample();
    await delay(LATE_MS);
    const late = reportsBetween(burstEnd.reports, await scrapeReports(mesh.spoke.url));
    const burst = {
      ...window(burstStart, burstEnd),
      edits: plan.writes.length,
      editingMs: Math.round(result.editingMs),
      services: plan.finals.length,
      allAppliedMs: Math.round(result.allAppliedAt - result.tFirst),
      serviceToAllApplied: result.serviceToAllApplied,
      tailMs: Math.round(burstEnd.t - result.allAppliedAt),
      settleMs: setup.settleMs,
      lateReports: late.total,
      lateMs: LATE_MS,
    };
    progress(
      `${name}: burst all applied in ${burst.allAppliedMs} ms (per service p50 ${burst.serviceToAllApplied.p50} p99 ${burst.serviceToAllApplied.p99} ms); ` +
        `spoke ${burst.spokeCpuMsPerS} ms CPU/s; ${burst.configWritesPerS} config + ${burst.statusWritesPerS} status writes/s; ${burst.reports.total} reports (${burst.lateReports} more in the ${LATE_MS / 1000} s after)`,
    );
    await pool.stopAgents();
    return { reporting, loadAverage, agentsReadyMs, idle: window(idleStart, idleEnd), burst };
  } finally {
    counter.close();
    await pool.close().catch(() => undefined);
    await mesh.stop();
  }
}
