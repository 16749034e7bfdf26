/**
 * `npm run bench -- --fleet`: what the agents' reports (`ReportAppliedConfig`)
 * cost, measured twice in one run with everything else equal: a leg with
 * reporting off (the agents' client has no `reportAppliedConfig`), then one
 * with it on, each on its own fresh etcd with its own hub and spoke
 * registrar processes and agent workers (fleet-leg.ts).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beginRun, type LegBenchFlags, machineOf, oneMinuteLoad, profileArgs } from "../leg-run.js";
import { createScenario } from "../scenario.js";
import { type FleetLeg, runFleetLeg } from "./fleet-leg.js";

/** The flags of the fleet benchmark (see bench-flags.ts). */
export type FleetBenchFlags = LegBenchFlags;

/** The raw results (bench/results/fleet.json). */
export interface FleetBenchResults {
  readonly startedAt: string;
  /** `loadAverage`: the 1-minute load average at the start (others' work too), `loadAverageEnd` at the end. */
  readonly machine: { cpus: number; node: string; loadAverage: number; loadAverageEnd: number };
  readonly flags: FleetBenchFlags;
  /** The spoke's `--agent-report-interval` (its default). */
  readonly reportInterval: string;
  /** How the writes were counted. */
  readonly writesCountedBy: string;
  /** Reporting off, then on. */
  readonly legs: readonly FleetLeg[];
}

/** The registrar's default report interval, passed explicitly. */
export const REPORT_INTERVAL = "30s";
/** The idle window before the burst (ms): one report interval, so every agent heartbeats about once. */
const IDLE_MS = 30_000;
/** After all applied, the burst window goes on for at least twice the default status interval (1 s). */
const SETTLE_MS = 2_000;

/** Runs both legs; see the module comment. */
export async function runFleetBench(flags: FleetBenchFlags): Promise<FleetBenchResults> {
  const { startedAt, loadAverage } = beginRun();
  const scenario = createScenario(flags);
  const dir = await mkdtemp(join(tmpdir(), "aether-bench-fleet-"));
  try {
    const profile = profileArgs(flags.cpuProfDir);
    const legs: FleetLeg[] = [];
    for (const reporting of [false, true]) {
      const setup = {
        services: flags.services,
        agents: flags.agents,
        workers: flags.workers,
        scenario,
        dir: join(dir, reporting ? "reporting" : "silent"),
        reportInterval: REPORT_INTERVAL,
        profile,
        idleMs: IDLE_MS,
        settleMs: SETTLE_MS,
      };
      legs.push(await runFleetLeg(setup, reporting, oneMinuteLoad()));
    }
    return {
      startedAt,
      machine: machineOf(loadAverage),
      flags,
      reportInterval: REPORT_INTERVAL,
      writesCountedBy:
        "put and delete events of one raw etcd watch on <prefix>/clusters/, by key (parseProjectionKey, parseStatusKey)",
      legs,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
