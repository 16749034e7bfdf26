/**
 * What the benchmark's two-leg modes (bench/signing/, bench/fleet/) share:
 * the start of a run (its time, the load, the compiled mains), the
 * machine's description, the `--cpu-prof` options per process, and a
 * leg's fresh etcd with the mesh's manifest directory written.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import { type EtcdHandle, startEtcd } from "../test/support/etcd.js";
import type { RegistrarProcess } from "../test/support/registrar-process.js";
import { buildMains, progress } from "./run-bench.js";
import { meshManifests } from "./scenario.js";

/** The flags of a two-leg mode (see bench-flags.ts). */
export interface LegBenchFlags {
  readonly services: number;
  readonly agents: number;
  readonly deps: number;
  readonly changes: number;
  readonly workers: number;
  readonly seed: number;
  /** `--cpu-prof`: the registrars and workers write CPU profiles here; undefined: none. */
  readonly cpuProfDir?: string;
}

/** The 1-minute load average now, two decimals (others' work too). */
export const oneMinuteLoad = (): number => Math.round((loadavg()[0] ?? 0) * 100) / 100;

/** Records when the run started and the load then, and compiles the mains (as the image runs them). */
export function beginRun(): { startedAt: string; loadAverage: number } {
  const started = { startedAt: new Date().toISOString(), loadAverage: oneMinuteLoad() };
  progress("compiling the registrar and agent (deploy/tsconfig.build.json → dist/)");
  buildMains();
  return started;
}

/** The machine a run ran on: CPUs, Node, the load at its start (given) and now. */
export function machineOf(loadAverage: number): {
  cpus: number;
  node: string;
  loadAverage: number;
  loadAverageEnd: number;
} {
  return {
    cpus: availableParallelism(),
    node: process.version,
    loadAverage,
    loadAverageEnd: oneMinuteLoad(),
  };
}

/** The node options that make the process named write a CPU profile under `dir`; none without it. */
export function profileArgs(dir: string | undefined): (name: string) => string[] {
  return (name) => (dir === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", join(dir, name)]);
}

/** A leg's fresh etcd, the registrars it stops with it, and the mesh's manifest directory. */
export interface LegStore {
  readonly etcd: EtcdHandle;
  /** The registrars started on it (the caller adds them), stopped by `stop` before etcd. */
  readonly registrars: RegistrarProcess[];
  /** `DIR/manifests`, holding the mesh of `services` as of edit 0. */
  readonly manifests: string;
  stop(): Promise<void>;
}

/** Starts etcd and writes the mesh's manifests under `dir`; stops etcd again if the writing fails. */
export async function startLegStore(dir: string, services: number): Promise<LegStore> {
  const etcd = await startEtcd();
  const registrars: RegistrarProcess[] = [];
  const stop = async () => {
    for (const registrar of registrars) await registrar.stop().catch(() => undefined);
    await etcd.stop();
  };
  try {
    const manifests = join(dir, "manifests");
    await mkdir(manifests, { recursive: true });
    for (const [file, text] of meshManifests(services)) {
      await writeFile(join(manifests, file), text);
    }
    return { etcd, registrars, manifests, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
