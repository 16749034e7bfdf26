/**
 * Starts `aether-registrar` as a separate OS process, the way an operator
 * runs it, on a free loopback port; learns its URL from its JSON log; and
 * stops it (SIGTERM, then SIGKILL) however the test ends.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { mainEntry } from "./process-entry.js";

const ROOT = resolve(import.meta.dirname, "../..");
const MAIN = resolve(ROOT, "services/registrar/main.ts");

/** A running registrar process. */
export interface RegistrarProcess {
  /** Its base URL, for example `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Where `/healthz`, `/readyz` and `/metrics` answer in plain HTTP: `--admin-listen`'s URL, else {@link url}. */
  readonly adminUrl: string;
  /** Its OS process id. */
  readonly pid: number;
  /** Every JSON log line it wrote so far, parsed. */
  readonly logs: Record<string, unknown>[];
  /** The lines it wrote on stderr that are not JSON (a crash's report, for example). */
  readonly stderr: readonly string[];
  /** Resolves with its exit code (null when a signal ended it) once it is gone. */
  readonly exited: Promise<number | null>;
  /** Resolves with the first log line (present or future) that satisfies `match`. */
  waitForLog(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  /** Sends SIGTERM and resolves with the exit code (SIGKILL after `timeoutMs`). */
  stop(timeoutMs?: number): Promise<number | null>;
  /** Sends SIGKILL and resolves once it is gone. */
  kill(): Promise<void>;
}

/** Processes not yet stopped, so `stopAllRegistrars` can clean up after a failed test. */
const running = new Set<ChildProcess>();

/**
 * Spawns a registrar with `args` (`--listen 127.0.0.1:0` is added unless
 * `--listen` is given) and resolves once it logs that it is serving.
 */
export async function startRegistrarProcess(
  args: readonly string[],
  options: {
    timeoutMs?: number;
    env?: NodeJS.ProcessEnv;
    /** Runs `node` through this command, for example `["ip", "netns", "exec", ns]`. */
    commandPrefix?: readonly string[];
    /** Extra `node` options, for example `["--cpu-prof"]`. */
    nodeArgs?: readonly string[];
    /**
     * A compiled JavaScript main to run instead of the TypeScript sources
     * (without tsx), as the container image does; see deploy/tsconfig.build.json.
     */
    script?: string;
    /** Runs the sources through `node --import tsx` even when the tests' compiled build exists. */
    tsx?: boolean;
  } = {},
): Promise<RegistrarProcess> {
  const argv = args.some((a) => a.startsWith("--listen"))
    ? [...args]
    : [...args, "--listen", "127.0.0.1:0"];
  const entry =
    options.script === undefined ? mainEntry(MAIN, { tsx: options.tsx }) : [options.script];
  const node = [process.execPath, ...(options.nodeArgs ?? []), ...entry, ...argv];
  const [command, ...commandArgs] = [...(options.commandPrefix ?? []), ...node];
  const child = spawn(command as string, commandArgs, {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: undefined, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  const logs: Record<string, unknown>[] = [];
  const waiters: {
    match: (l: Record<string, unknown>) => boolean;
    resolve: (l: Record<string, unknown>) => void;
  }[] = [];
  const stderrLines: string[] = [];
  createInterface({ input: child.stderr }).on("line", (text) => {
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(text) as Record<string, unknown>;
    } catch {
      stderrLines.push(text);
      return;
    }
    logs.push(line);
    for (const waiter of [...waiters]) {
      if (waiter.match(line)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  child.stdout.resume();
  const exited = once(child, "exit").then(([code]) => {
    running.delete(child);
    return code as number | null;
  });

  const waitForLog = (match: (l: Record<string, unknown>) => boolean, timeoutMs = 10_000) => {
    const seen = logs.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise<Record<string, unknown>>((resolvePromise, reject) => {
      const timer = setTimeout(() => {
        reject(
          new Error(
            `registrar did not log the expected line within ${timeoutMs} ms; stderr: ${stderrLines.join("\n")}`,
          ),
        );
      }, timeoutMs);
      waiters.push({
        match,
        resolve: (l) => {
          clearTimeout(timer);
          resolvePromise(l);
        },
      });
      void exited.then((code) => {
        clearTimeout(timer);
        reject(
          new Error(
            `registrar exited with ${code} before logging the expected line; stderr: ${stderrLines.join("\n")}`,
          ),
        );
      });
    });
  };

  const serving = await waitForLog(
    (l) => l.msg === "registrar serving",
    options.timeoutMs ?? 15_000,
  );
  return {
    url: serving.url as string,
    adminUrl: (serving.adminUrl ?? serving.url) as string,
    pid: child.pid as number,
    logs,
    stderr: stderrLines,
    exited,
    waitForLog,
    async stop(timeoutMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Kills every registrar process this module started that is still running. */
export async function stopAllRegistrars(): Promise<void> {
  await Promise.all(
    [...running].map(async (child) => {
      child.kill("SIGKILL");
      if (child.exitCode === null && child.signalCode === null) await once(child, "exit");
    }),
  );
}
