/**
 * The coordinator's side of the agent workers: forks them, spreads the
 * fleet's agents over them, and turns their reports into promises and
 * events the phases of `bench/main.ts` await.
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { resolve } from "node:path";
import type { ClientTlsConfig } from "../services/process/client-tls-flags.js";
import type {
  AgentSignatureOptions,
  WorkerAgentSpec,
  WorkerCommand,
  WorkerReport,
} from "./worker-protocol.js";

const WORKER = resolve(import.meta.dirname, "agent-worker.ts");

/** The workers of one benchmark run. */
export interface WorkerPool {
  /** The workers' process ids. */
  readonly pids: readonly number[];
  /** Registers a listener for every report of every worker; returns a function that removes it. */
  onReport(listener: (report: WorkerReport) => void): () => void;
  /**
   * Starts `agents` spread round-robin over the workers, in `mode`, and
   * resolves with when each became ready (its first complete route table);
   * rejects when they are not all ready within `timeoutMs` (default 180 s).
   */
  startAgents(
    registrar: string,
    agents: readonly WorkerAgentSpec[],
    mode: "watch" | "poll",
    options: {
      pollIntervalMs?: number;
      keepaliveTimeoutMs: number;
      timeoutMs?: number;
      /** See WorkerCommand `start`: the agents' own connections (TLS with `tls`). */
      ownConnection?: { tls?: ClientTlsConfig };
      /** See WorkerCommand `start`: the agents verify signatures with these. */
      signatures?: AgentSignatureOptions;
      /** See WorkerCommand `start`: the agents report what they applied. */
      report?: boolean;
    },
  ): Promise<Map<number, number>>;
  /** Bytes every agent has read from the network so far, by agent id. */
  bytes(): Promise<Map<number, number>>;
  /** Every agent's apply-delay histogram totals (seconds), by agent id. */
  applyDelays(): Promise<Map<number, { sum: number; count: number }>>;
  /** Arms the SYNCED reports: each agent reports its next SYNCED event once. */
  markResync(): void;
  /** Measures one fresh agent's cold sync (start to first table) in the first worker, in ms. */
  coldSync(deps: readonly string[]): Promise<number>;
  /** Opens the floor measurement's raw etcd watch in the first worker (`endpoint`: one or a comma list). */
  floorWatch(endpoint: string, prefix: string): Promise<void>;
  /** Stops every agent (and the floor watch). */
  stopAgents(): Promise<void>;
  /** Ends the worker processes. */
  close(): Promise<void>;
}

/** Forks `count` workers; `nodeArgs` are added to their `node` options (for example `--cpu-prof`). */
export function createWorkerPool(count: number, nodeArgs: readonly string[] = []): WorkerPool {
  const listeners = new Set<(report: WorkerReport) => void>();
  const children: ChildProcess[] = [];
  let nextRequest = 1;
  for (let i = 0; i < count; i++) {
    const child = fork(WORKER, [], {
      execArgv: [...nodeArgs, "--import", "tsx"],
      serialization: "advanced",
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    child.on("message", (report: WorkerReport) => {
      if (report.type === "error") process.stderr.write(`bench worker ${i}: ${report.message}\n`);
      for (const listener of [...listeners]) listener(report);
    });
    child.on("exit", (code, signal) => {
      if (code !== 0 && signal === null)
        process.stderr.write(`bench worker ${i} exited with ${code}\n`);
    });
    children.push(child);
  }
  const send = (child: ChildProcess, command: WorkerCommand): void => {
    child.send(command);
  };
  const onReport = (listener: (report: WorkerReport) => void): (() => void) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  };
  /** Sends a request to `targets` and resolves with each one's matching answer. */
  const ask = <T extends WorkerReport>(
    targets: readonly ChildProcess[],
    command: (request: number) => WorkerCommand,
    type: T["type"],
  ): Promise<T[]> => {
    const request = nextRequest++;
    const answers: T[] = [];
    return new Promise((resolvePromise) => {
      const off = onReport((report) => {
        if (report.type !== type || (report as { request?: number }).request !== request) return;
        answers.push(report as T);
        if (answers.length === targets.length) {
          off();
          resolvePromise(answers);
        }
      });
      for (const child of targets) send(child, command(request));
    });
  };

  return {
    pids: children.map((c) => c.pid as number),
    onReport,
    startAgents(registrar, agents, mode, options) {
      const ready = new Map<number, number>();
      const timeoutMs = options.timeoutMs ?? 180_000;
      return new Promise((resolvePromise, reject) => {
        const timer = setTimeout(() => {
          off();
          reject(
            new Error(
              `only ${ready.size} of ${agents.length} agents were ready after ${timeoutMs} ms`,
            ),
          );
        }, timeoutMs);
        const off = onReport((report) => {
          if (report.type !== "ready") return;
          for (const item of report.items) ready.set(item.id, item.t);
          if (ready.size === agents.length) {
            clearTimeout(timer);
            off();
            resolvePromise(ready);
          }
        });
        children.forEach((child, index) => {
          send(child, {
            type: "start",
            registrar,
            agents: agents.filter((_, i) => i % children.length === index),
            mode,
            pollIntervalMs: options.pollIntervalMs,
            keepaliveTimeoutMs: options.keepaliveTimeoutMs,
            ...(options.ownConnection === undefined
              ? {}
              : { ownConnection: options.ownConnection }),
            ...(options.signatures === undefined ? {} : { signatures: options.signatures }),
            ...(options.report === undefined ? {} : { report: options.report }),
          });
        });
      });
    },
    async bytes() {
      const answers = await ask<Extract<WorkerReport, { type: "bytes" }>>(
        children,
        (request) => ({ type: "bytes", request }),
        "bytes",
      );
      return new Map(answers.flatMap((a) => a.bytes));
    },
    async applyDelays() {
      const answers = await ask<Extract<WorkerReport, { type: "apply-delays" }>>(
        children,
        (request) => ({ type: "apply-delays", request }),
        "apply-delays",
      );
      return new Map(
        answers.flatMap((a) => a.totals.map(([id, sum, count]) => [id, { sum, count }] as const)),
      );
    },
    markResync() {
      for (const child of children) send(child, { type: "mark-resync" });
    },
    async coldSync(deps) {
      const [answer] = await ask<Extract<WorkerReport, { type: "cold-sync" }>>(
        children.slice(0, 1),
        (request) => ({ type: "cold-sync", request, deps }),
        "cold-sync",
      );
      return (answer as { ms: number }).ms;
    },
    floorWatch(endpoint, prefix) {
      return new Promise((resolvePromise) => {
        const off = onReport((report) => {
          if (report.type !== "floor-ready") return;
          off();
          resolvePromise();
        });
        send(children[0] as ChildProcess, { type: "floor-watch", endpoint, prefix });
      });
    },
    async stopAgents() {
      await ask(children, (request) => ({ type: "stop", request }), "stopped");
    },
    async close() {
      await Promise.all(
        children.map(async (child) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          const exited = once(child, "exit");
          child.disconnect();
          const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
          await exited;
          clearTimeout(timer);
        }),
      );
    },
  };
}
