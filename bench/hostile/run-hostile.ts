/**
 * `npm run bench -- --hostile`: one registrar process, as the deployment
 * runs it (compiled, the Deployment's `NODE_OPTIONS`, the production limits, an
 * admin port), on a real etcd, serving real agents, while attacker
 * processes (`attacker.ts`) throw at its API port, phase by phase: 20,000
 * hostile streams, 20,000 idle connections, 10,000 concurrent list calls,
 * then all three at once. Throughout, probes hit `/healthz` on the admin
 * and the API port the way the kubelet does, a change reaches the agents
 * every second, and a polite client lists its services; each phase records
 * what they saw, the registrar's peak RSS and CPU, and its refusals by
 * reason. A registrar that dies ends the run, reported as such.
 */

import { availableParallelism } from "node:os";
import { setTimeout as delay } from "node:timers/promises";
import { createEtcdStore } from "../../services/registrar/store/etcd-store.js";
import { startEtcd } from "../../test/support/etcd.js";
import { makeProjection } from "../../test/support/projections.js";
import {
  type RegistrarProcess,
  startRegistrarProcess,
} from "../../test/support/registrar-process.js";
import { waitFor } from "../../test/support/wait.js";
import { deployedNodeOptions } from "../deployed-node-options.js";
import { readMemory, sampleProcess } from "../proc-stats.js";
import { buildMains, progress, REGISTRAR_JS, REGISTRAR_MANIFEST } from "../run-bench.js";
import { type Attack, prepareAttack } from "./attack-pool.js";
import type { AttackMode, AttackStats } from "./attack-protocol.js";
import { type GoodWindow, HOT_SERVICE, startGoodTraffic } from "./good-traffic.js";
import { type ProbeSummary, startProber } from "./health-prober.js";

/** What `--hostile` is told. */
export interface HostileFlags {
  readonly services: number;
  readonly agents: number;
  readonly deps: number;
  readonly phaseSeconds: number;
  readonly streams: number;
  readonly idleConnections: number;
  readonly concurrentLists: number;
  readonly heapMb: number;
}

/** The memory limit of the registrar's pod, in MiB (deploy/base/registrar-deployment.yaml; a test keeps them equal). */
export const POD_LIMIT_MB = 640;
/** Idle connections per attacker process (each process has its own descriptor limit). */
const IDLE_PER_PROCESS = 5_000;

/** One phase's measurements. */
export interface HostilePhase {
  readonly name: string;
  readonly attacks: readonly AttackMode[];
  readonly seconds: number;
  readonly healthAdmin: ProbeSummary;
  readonly healthApi: ProbeSummary;
  readonly good: GoodWindow;
  readonly registrarPeakRssMb: number;
  readonly registrarPeakCpuPercent: number;
  /** The registrar's VmHWM once the phase's attackers were stopped (the peak of the run so far), in MiB. */
  readonly registrarHwmMb: number;
  /** Refusals counted by the registrar in the phase, by reason. */
  readonly refusals: Readonly<Record<string, number>>;
  readonly attackers: readonly AttackStats[];
  /** Whether the registrar process was still running at the phase's end. */
  readonly registrarAlive: boolean;
}

/** Everything `--hostile` measured. */
export interface HostileResults {
  readonly startedAt: string;
  readonly machine: { readonly cpus: number; readonly node: string; readonly etcd: string };
  readonly flags: HostileFlags;
  readonly podLimitMb: number;
  readonly phases: readonly HostilePhase[];
  readonly registrarAlive: boolean;
  /** The registrar's peak RSS over the whole run (VmHWM), in MiB. */
  readonly registrarPeakRssMb: number;
  /** The registrar's last lines on stderr when it died. */
  readonly registrarDeath: string | undefined;
  /** The registrar's warnings and errors, by message, with how often each was logged. */
  readonly registrarWarnings: Readonly<Record<string, number>>;
}

/** Runs the hostile benchmark; see the module comment. */
export async function runHostileBench(flags: HostileFlags): Promise<HostileResults> {
  const startedAt = new Date().toISOString();
  progress("compiling the registrar (deploy/tsconfig.build.json → dist/)");
  buildMains();
  const etcd = await startEtcd();
  let registrar: RegistrarProcess | undefined;
  try {
    const etcdVersion = await fetch(`${etcd.endpoint}/version`)
      .then((r) => r.json() as Promise<{ etcdserver?: string }>)
      .then((v) => v.etcdserver ?? "unknown");
    const services = Array.from(
      { length: flags.services },
      (_, i) =>
        `ns-${String(Math.floor(i / 100)).padStart(4, "0")}/svc-${String(i).padStart(6, "0")}`,
    );
    // Written before the registrar starts, so that it serves them all from
    // its first sync and nothing of its own start-up overlaps an attack.
    const store = createEtcdStore({ origin: "hub", endpoints: [etcd.endpoint] });
    const all = [HOT_SERVICE, ...services];
    for (let i = 0; i < all.length; i += 200) {
      await Promise.all(all.slice(i, i + 200).map((s) => store.put(makeProjection(s))));
    }
    progress(`registrar with ${flags.services} services, heap cap ${flags.heapMb} MB`);
    registrar = await startRegistrarProcess(
      [
        ...["--cluster", "hub", "--store", "etcd", "--etcd-endpoints", etcd.endpoint],
        ...["--admin-listen", "127.0.0.1:0"],
      ],
      {
        // The Deployment's Node options (its semi-space cap above all), the heap cap as asked:
        // an option on the command line wins over the same one in NODE_OPTIONS.
        env: { NODE_OPTIONS: await deployedNodeOptions(REGISTRAR_MANIFEST, "registrar") },
        nodeArgs: [`--max-old-space-size=${flags.heapMb}`],
        timeoutMs: 60_000,
        script: REGISTRAR_JS,
      },
    );
    const r = registrar;
    const serving = await r.waitForLog((line) => line.msg === "registrar serving");
    const admin = serving.adminUrl as string;
    const port = Number(new URL(r.url).port);
    let alive = true;
    void r.exited.then(() => {
      alive = false;
    });

    await waitFor(
      async () => (await fetch(`${admin}/readyz`)).ok,
      60_000,
      "the registrar's readiness",
    );
    progress(`${flags.agents} agents, each depending on ${HOT_SERVICE} and ${flags.deps - 1} more`);
    const good = await startGoodTraffic({
      registrarUrl: r.url,
      store,
      agents: flags.agents,
      deps: services.slice(0, Math.max(0, flags.deps - 1)),
    });
    const adminProbe = startProber(`${admin}/healthz`);
    const apiProbe = startProber(`${r.url}/healthz`);
    const refusalsNow = async (): Promise<Record<string, number>> => {
      const text = await fetch(`${admin}/metrics`)
        .then((res) => res.text())
        .catch(() => "");
      const counts: Record<string, number> = {};
      for (const match of text.matchAll(
        /^aether_config_server_refusals_total\{reason="([^"]+)"\} (\S+)$/gm,
      )) {
        counts[match[1] as string] = Number(match[2]);
      }
      return counts;
    };

    const phases: HostilePhase[] = [];
    const plan: { name: string; attacks: AttackMode[] }[] = [
      { name: "baseline", attacks: [] },
      { name: `${flags.streams} hostile streams`, attacks: ["streams"] },
      { name: `${flags.idleConnections} idle connections`, attacks: ["idle"] },
      { name: `${flags.concurrentLists} concurrent list calls`, attacks: ["lists"] },
      { name: "all three at once", attacks: ["streams", "idle", "lists"] },
      { name: "recovery", attacks: [] },
    ];
    for (const step of plan) {
      if (!alive) break;
      progress(`phase: ${step.name} (${flags.phaseSeconds} s)`);
      const attacks: Attack[] = [];
      for (const mode of step.attacks) attacks.push(await prepare(mode, port, flags));
      // The windows start now: forking and loading the attackers is not measured.
      await good.take();
      await adminProbe.take();
      await apiProbe.take();
      const before = await refusalsNow();
      const sampler = sampleProcess(r.pid, 100);
      await Promise.all(attacks.map((attack) => attack.start()));
      await Promise.race([delay(flags.phaseSeconds * 1_000), r.exited]);
      // The windows end with the attack: stopping the attackers is not measured.
      const healthAdmin = await adminProbe.take();
      const healthApi = await apiProbe.take();
      const goodWindow = await good.take();
      const sample = sampler.stop();
      const attackers = (await Promise.all(attacks.map((a) => a.stop()))).flat();
      const after = await refusalsNow();
      const refusals: Record<string, number> = {};
      for (const [reason, count] of Object.entries(after)) {
        const delta = count - (before[reason] ?? 0);
        if (delta > 0) refusals[reason] = delta;
      }
      phases.push({
        name: step.name,
        attacks: step.attacks,
        seconds: flags.phaseSeconds,
        healthAdmin,
        healthApi,
        good: goodWindow,
        registrarPeakRssMb: Math.round(sample.peakRssMb),
        registrarPeakCpuPercent: Math.round(sample.peakCpuPercent),
        registrarHwmMb: Math.round(readMemory(r.pid)?.peakRssMb ?? Number.NaN),
        refusals,
        attackers,
        registrarAlive: alive,
      });
      const last = phases.at(-1) as HostilePhase;
      progress(
        `  /healthz (admin) p99 ${last.healthAdmin.latency.p99} ms, ${last.healthAdmin.failures} failed; ` +
          `propagation p99 ${last.good.propagation.p99} ms, ${last.good.missed} missed; ` +
          `reconnects ${last.good.streamReconnects}; RSS peak ${last.registrarPeakRssMb} MB (VmHWM ${last.registrarHwmMb})`,
      );
    }
    await adminProbe.stop();
    await apiProbe.stop();
    await good.stop();
    await store.close();
    const peak = readMemory(r.pid)?.peakRssMb;
    const results: HostileResults = {
      startedAt,
      machine: { cpus: availableParallelism(), node: process.version, etcd: etcdVersion },
      flags,
      podLimitMb: POD_LIMIT_MB,
      phases,
      registrarAlive: alive,
      registrarPeakRssMb: Math.round(peak ?? Math.max(...phases.map((p) => p.registrarPeakRssMb))),
      registrarDeath: alive ? undefined : r.stderr.slice(-40).join("\n"),
      registrarWarnings: warningsOf(r.logs),
    };
    return results;
  } finally {
    await registrar?.stop();
    await etcd.stop();
  }
}

/** Loads the attack of `mode` at its configured size, over as many processes as it needs. */
function prepare(mode: AttackMode, port: number, flags: HostileFlags): Promise<Attack> {
  if (mode === "streams") return prepareAttack(mode, port, flags.streams, 1);
  if (mode === "idle") {
    const processes = Math.max(1, Math.ceil(flags.idleConnections / IDLE_PER_PROCESS));
    return prepareAttack(mode, port, flags.idleConnections, processes);
  }
  return prepareAttack(mode, port, flags.concurrentLists, 2);
}

/** Counts the warn-and-above lines of `logs` by message (and reason, when they carry one). */
function warningsOf(logs: readonly Record<string, unknown>[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of logs) {
    if (typeof line.level !== "string" || !["warn", "error", "fatal"].includes(line.level))
      continue;
    const key = `${line.level}: ${String(line.msg)}${line.reason === undefined ? "" : ` (${String(line.reason)})`}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}
