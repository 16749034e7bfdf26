/**
 * Starts `aether-agent` as a separate OS process, the way a node runs it, on
 * a free loopback port; learns its URL from its JSON log; reads its
 * endpoints (`/routes`, `/readyz`, `/metrics`); and stops it (SIGTERM, then
 * SIGKILL) however the test ends.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { setTimeout as delay } from "node:timers/promises";
import { mainEntry } from "./process-entry.js";
import { type RegistrarProcess, startRegistrarProcess } from "./registrar-process.js";
import { waitFor } from "./wait.js";

const ROOT = resolve(import.meta.dirname, "../..");
const MAIN = resolve(ROOT, "clients/agent/main.ts");

/** One JSON log line of the agent. */
export type LogLine = Record<string, unknown>;

/** An entry of the agent's `/routes` document. */
export interface RoutesEntry {
  /** The service. */
  readonly service: string;
  /** Which source decided it. */
  readonly source: "local" | "imported";
  /** The origin cluster (the agent's own for local routes). */
  readonly origin: string;
  /** The version that decided it. */
  readonly version: string;
  /** The projection in proto JSON (only the fields tests read are typed). */
  readonly projection: {
    readonly service: string;
    readonly originCluster?: string;
    readonly version?: string;
    /** The origin's signature (imported projections its exporter signed); its key id names the signer. */
    readonly signature?: { readonly keyId?: string; readonly algorithm?: string };
    readonly routes?: {
      readonly name?: string;
      readonly rules?: {
        readonly backends?: { readonly service?: string; readonly weight?: number }[];
      }[];
    }[];
  };
}

/** A running agent process. */
export interface AgentProcess {
  /** Its base URL, for example `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Its OS process id. */
  readonly pid: number;
  /** Every JSON log line it wrote so far. */
  readonly logs: LogLine[];
  /** Resolves with the first log line (present or future) that satisfies `match`. */
  waitForLog(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** GETs a path and resolves with the status and the body text. */
  get(path: string): Promise<{ status: number; body: string }>;
  /** The `/routes` entries (throws unless it answers 200). */
  routes(): Promise<RoutesEntry[]>;
  /** Reads one sample of `/metrics`, for example `aether_config_agent_mode{mode="poll"}`; 0 when absent. */
  metric(sample: string): Promise<number>;
  /** Waits until `/readyz` answers 200. */
  waitUntilReady(timeoutMs?: number): Promise<void>;
  /** Waits until `predicate` holds for a metric sample. */
  waitForMetric(
    sample: string,
    predicate: (value: number) => boolean,
    timeoutMs?: number,
  ): Promise<number>;
  /** Sends SIGTERM and resolves with the exit code (SIGKILL after `timeoutMs`). */
  stop(timeoutMs?: number): Promise<number | null>;
  /** Sends SIGKILL and resolves once it is gone. */
  kill(): Promise<void>;
}

const running = new Set<ChildProcess>();

/** Parses the value of one sample from a Prometheus text exposition; undefined when absent. */
export function readSample(text: string, sample: string): number | undefined {
  for (const line of text.split("\n")) {
    if (line.startsWith(`${sample} `)) return Number(line.slice(sample.length + 1));
  }
  return undefined;
}

/**
 * Spawns an agent with `args` (`--listen 127.0.0.1:0` is added unless given)
 * and resolves once it logs that it is serving. Rejects with its stderr when
 * it exits first.
 */
export async function startAgentProcess(
  args: readonly string[],
  options: {
    timeoutMs?: number;
    env?: NodeJS.ProcessEnv;
    /** A compiled JavaScript main to run instead of the TypeScript sources (without tsx). */
    script?: string;
    /** Runs the sources through `node --import tsx` even when the tests' compiled build exists. */
    tsx?: boolean;
  } = {},
): Promise<AgentProcess> {
  const argv = args.includes("--listen") ? [...args] : [...args, "--listen", "127.0.0.1:0"];
  const entry =
    options.script === undefined ? mainEntry(MAIN, { tsx: options.tsx }) : [options.script];
  const child = spawn(process.execPath, [...entry, ...argv], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: undefined, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  const logs: LogLine[] = [];
  const other: string[] = [];
  const waiters = new Set<{ match: (l: LogLine) => boolean; done: (l: LogLine) => void }>();
  createInterface({ input: child.stderr }).on("line", (text) => {
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      other.push(text);
      return;
    }
    logs.push(line);
    for (const waiter of [...waiters]) if (waiter.match(line)) waiter.done(line);
  });
  child.stdout.resume();
  const exited = once(child, "exit").then(([code]) => {
    running.delete(child);
    return code as number | null;
  });
  const describe = () => `stderr: ${other.join("\n")}\nlogs: ${logs.map((l) => l.msg).join(" | ")}`;

  const waitForLog = (match: (l: LogLine) => boolean, timeoutMs = 10_000): Promise<LogLine> => {
    const seen = logs.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolvePromise, reject) => {
      const waiter = {
        match,
        done: (line: LogLine) => {
          clearTimeout(timer);
          waiters.delete(waiter);
          resolvePromise(line);
        },
      };
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(new Error(`agent did not log the expected line in ${timeoutMs} ms; ${describe()}`));
      }, timeoutMs);
      waiters.add(waiter);
      void exited.then((code) => {
        if (!waiters.has(waiter)) return;
        clearTimeout(timer);
        waiters.delete(waiter);
        reject(new Error(`agent exited with ${code} first; ${describe()}`));
      });
    });
  };

  const serving = await waitForLog((l) => l.msg === "agent serving", options.timeoutMs ?? 15_000);
  const url = serving.url as string;
  const get = async (path: string) => {
    const response = await fetch(`${url}${path}`);
    return { status: response.status, body: await response.text() };
  };
  const metric = async (sample: string) => readSample((await get("/metrics")).body, sample) ?? 0;
  /** SIGTERM with a SIGKILL after `graceMs`, or SIGKILL at once when undefined; resolves with the exit code. */
  const terminate = async (graceMs: number | undefined): Promise<number | null> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(graceMs === undefined ? "SIGKILL" : "SIGTERM");
    }
    const escalate =
      graceMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), graceMs);
    try {
      return await exited;
    } finally {
      clearTimeout(escalate);
    }
  };

  return {
    url,
    pid: child.pid as number,
    logs,
    waitForLog,
    get,
    async routes() {
      const { status, body } = await get("/routes");
      if (status !== 200) throw new Error(`/routes answered ${status}: ${body}`);
      return (JSON.parse(body) as { services: RoutesEntry[] }).services;
    },
    metric,
    async waitForMetric(sample, predicate, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const value = await metric(sample);
        if (predicate(value)) return value;
        if (Date.now() >= deadline) {
          throw new Error(`agent metric ${sample} is still ${value} after ${timeoutMs} ms`);
        }
        await delay(25);
      }
    },
    waitUntilReady: (timeoutMs = 10_000) =>
      waitFor(async () => (await get("/readyz")).status === 200, timeoutMs, "agent /readyz", 25),
    stop: (timeoutMs = 10_000) => terminate(timeoutMs),
    async kill() {
      await terminate(undefined);
    },
  };
}

/** Kills every agent process this module started that is still running. */
export async function stopAllAgents(): Promise<void> {
  await Promise.all(
    [...running].map(async (child) => {
      const gone = once(child, "exit");
      child.kill("SIGKILL");
      if (child.exitCode === null && child.signalCode === null) await gone;
    }),
  );
}

/** Options of {@link startSpokeRegistrar}. */
export interface SpokeRegistrarOptions {
  /** The etcd client URL. */
  readonly endpoint: string;
  /** The store prefix. */
  readonly prefix: string;
  /** More flags (for example `--control-cluster hub`, `--keepalive 60s`, `--listen`). */
  readonly extra?: readonly string[];
}

/**
 * Starts the registrar an agent talks to in the agent tests: cluster `spoke`,
 * no export, over etcd with a 1 s store timeout (so an outage shows fast).
 */
export function startSpokeRegistrar(options: SpokeRegistrarOptions): Promise<RegistrarProcess> {
  return startRegistrarProcess([
    "--cluster",
    "spoke",
    "--store",
    "etcd",
    "--etcd-endpoints",
    options.endpoint,
    "--etcd-prefix",
    options.prefix,
    "--store-timeout",
    "1s",
    ...(options.extra ?? []),
  ]);
}
