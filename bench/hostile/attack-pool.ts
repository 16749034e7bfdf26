/**
 * The coordinator's side of the attackers (`attacker.ts`): forks the
 * processes of one attack, splits its size over them, and collects what
 * each saw when the attack is stopped.
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { resolve } from "node:path";
import type { AttackCommand, AttackMode, AttackReport, AttackStats } from "./attack-protocol.js";

const ATTACKER = resolve(import.meta.dirname, "attacker.ts");

/** An attack whose processes are loaded, started by {@link Attack.start}. */
export interface Attack {
  /** The attacker processes' ids. */
  readonly pids: readonly number[];
  /** Starts every attacker; resolves once each has. */
  start(): Promise<void>;
  /** Stops every attacker and resolves with what each saw. */
  stop(): Promise<AttackStats[]>;
}

/**
 * Forks the attackers of `count` (streams, connections or calls, by `mode`)
 * against the API port `port`, split evenly over `processes` attacker
 * processes, and resolves once they are loaded; nothing is sent to the
 * registrar before {@link Attack.start}.
 */
export async function prepareAttack(
  mode: AttackMode,
  port: number,
  count: number,
  processes: number,
): Promise<Attack> {
  const children: ChildProcess[] = [];
  const reports = new Map<ChildProcess, AttackReport[]>();
  const shares = new Map<ChildProcess, number>();
  for (let i = 0; i < processes; i++) {
    const share = Math.floor(count / processes) + (i < count % processes ? 1 : 0);
    if (share === 0) continue;
    const child = fork(ATTACKER, [], {
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const seen: AttackReport[] = [];
    reports.set(child, seen);
    child.on("message", (report: AttackReport) => {
      if (report.type === "error")
        process.stderr.write(`bench attacker ${mode}: ${report.message}\n`);
      seen.push(report);
    });
    shares.set(child, share);
    children.push(child);
  }
  await Promise.all(children.map((child) => reportOf(child, reports, "ready")));
  return {
    pids: children.map((child) => child.pid as number),
    async start() {
      for (const child of children) {
        const command: AttackCommand = { type: "start", mode, port, count: shares.get(child) ?? 0 };
        child.send(command);
      }
      await Promise.all(children.map((child) => reportOf(child, reports, "started")));
    },
    async stop() {
      const stats = await Promise.all(
        children.map(async (child) => {
          const stop: AttackCommand = { type: "stop" };
          child.send(stop);
          const report = await reportOf(child, reports, "stats");
          if (child.exitCode === null) await once(child, "exit");
          return report.type === "stats" ? report.stats : undefined;
        }),
      );
      return stats.filter((s): s is AttackStats => s !== undefined);
    },
  };
}

/** Resolves with `child`'s first report of `type` (seen already or to come). */
function reportOf(
  child: ChildProcess,
  reports: Map<ChildProcess, AttackReport[]>,
  type: AttackReport["type"],
): Promise<AttackReport> {
  const seen = reports.get(child) as AttackReport[];
  const found = seen.find((r) => r.type === type);
  if (found !== undefined) return Promise.resolve(found);
  return new Promise((resolvePromise, reject) => {
    const onMessage = (report: AttackReport) => {
      if (report.type !== type) return;
      child.off("message", onMessage);
      child.off("exit", onExit);
      resolvePromise(report);
    };
    const onExit = (code: number | null) => {
      child.off("message", onMessage);
      reject(new Error(`an attacker exited with ${code} before reporting ${type}`));
    };
    child.on("message", onMessage);
    child.once("exit", onExit);
  });
}
