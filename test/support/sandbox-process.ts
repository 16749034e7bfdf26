/**
 * The sandbox (`npm start`) as an OS process for the tests: started from the
 * tests' compiled build, or the way the start script does
 * (`node --import tsx services/sandbox/main.ts`), its
 * banner read (registrar, admin, agent and console URLs, the state directory, the
 * printed commands), and stopped: checked (SIGINT, exit 0, every port
 * closed, no child left, the temp state removed) or quietly.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { readdir, readFile, rm } from "node:fs/promises";
import { connect } from "node:net";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { expect } from "vitest";
import { READY_LINE } from "../../services/sandbox/sandbox-banner.js";
import { mainEntry } from "./process-entry.js";
import { waitFor } from "./wait.js";

const ROOT = resolve(import.meta.dirname, "../..");
/** The sandbox's main module. */
export const SANDBOX_MAIN = resolve(ROOT, "services/sandbox/main.ts");
const MAIN = SANDBOX_MAIN;
/** A running sandbox process. */
export interface SandboxProcess {
  readonly child: ChildProcess;
  /** Every stdout line so far. */
  readonly lines: string[];
  /** Registrar URLs by cluster (hub, east, west). */
  readonly registrars: Map<string, string>;
  /** Registrar admin-port URLs (plain HTTP) by cluster. */
  readonly admin: Map<string, string>;
  /**
   * The printed ready-to-paste lines under `try`, in order: a `. FILE` line
   * changes the shell for the lines after it (see `printedSession`).
   */
  readonly commands: string[];
  /** Agent base URLs by cluster (east, west). */
  readonly agents: Map<string, string>;
  /** The printed state directory. */
  readonly stateDir: string;
  /** The printed console URL (`http://…/`). */
  readonly console: string;
  /** Resolves with the first stdout line (present or future) that satisfies `match`. */
  waitForLine(match: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Everything written to stderr so far. */
  stderr(): string;
}

/** Every process the tests spawned, and the sandboxes among them that got ready. */
export const started = new Set<ChildProcess>();
export const sandboxes = new Set<SandboxProcess>();

/**
 * Starts the sandbox with `args` and resolves once it printed its ready line;
 * from the tests' compiled build (see process-entry.ts) unless `tsx` is true.
 */
export async function startSandbox(
  args: readonly string[],
  options: { tsx?: boolean } = {},
): Promise<SandboxProcess> {
  const child = spawn(process.execPath, [...mainEntry(MAIN, options), ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: undefined },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.add(child);
  const exited = once(child, "exit");
  const lines: string[] = [];
  const waiters = new Set<{ match: (line: string) => boolean; done: (line: string) => void }>();
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    lines.push(line);
    for (const waiter of [...waiters]) if (waiter.match(line)) waiter.done(line);
  });
  const waitForLine = (match: (line: string) => boolean, timeoutMs = 20_000) => {
    const seen = lines.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise<string>((resolvePromise, reject) => {
      const waiter = {
        match,
        done: (line: string) => {
          clearTimeout(timer);
          waiters.delete(waiter);
          resolvePromise(line);
        },
      };
      const fail = (why: string) => {
        waiters.delete(waiter);
        reject(new Error(`${why}\nstdout:\n${lines.join("\n")}\nstderr:\n${stderr}`));
      };
      const timer = setTimeout(() => fail(`no matching line in ${timeoutMs} ms`), timeoutMs);
      waiters.add(waiter);
      void exited.then(() => {
        if (!waiters.has(waiter)) return;
        clearTimeout(timer);
        fail(`the sandbox exited with ${child.exitCode} first`);
      });
    });
  };
  await waitForLine((line) => line === READY_LINE, 30_000);
  const registrars = new Map<string, string>();
  const admin = new Map<string, string>();
  const agents = new Map<string, string>();
  let stateDir = "";
  let consoleUrl = "";
  for (const line of lines) {
    const registrar =
      /^ {2}(\w+)\s+(https?:\/\/\S+)\s+admin (http:\/\/\S+)\s+(control cluster|spoke),/.exec(line);
    if (registrar !== null) {
      registrars.set(registrar[1] as string, registrar[2] as string);
      admin.set(registrar[1] as string, registrar[3] as string);
    }
    const agent = /^ {2}(\w+)\s+(http:\/\/\S+)\/routes\s+follows /.exec(line);
    if (agent !== null) agents.set(agent[1] as string, agent[2] as string);
    const state = /^ {2}state: (\S+) /.exec(line);
    if (state !== null) stateDir = state[1] as string;
    const consoleLine = /^console {2}(http:\/\/\S+)/.exec(line);
    if (consoleLine !== null) consoleUrl = consoleLine[1] as string;
  }
  const tryAt = lines.indexOf("try");
  const end = lines.indexOf("", tryAt);
  const commands = lines.slice(tryAt + 1, end).map((line) => line.trim());
  const sandbox = {
    ...{ child, lines, registrars, admin, commands, agents, stateDir, waitForLine },
    console: consoleUrl,
    stderr: () => stderr,
  };
  sandboxes.add(sandbox);
  return sandbox;
}

/** The OS processes whose parent is `pid` (Linux /proc). */
async function childPids(pid: number): Promise<number[]> {
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  const pids: number[] = [];
  for (const task of tasks) {
    const text = await readFile(`/proc/${pid}/task/${task}/children`, "utf8").catch(() => "");
    pids.push(
      ...text
        .split(/\s+/)
        .filter((s) => s !== "")
        .map(Number),
    );
  }
  return pids;
}

/** Whether a TCP connection to `url`'s host and port is refused. */
function connectionRefused(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolvePromise) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once("connect", () => {
      socket.destroy();
      resolvePromise(false);
    });
    socket.once("error", (error: NodeJS.ErrnoException) =>
      resolvePromise(error.code === "ECONNREFUSED"),
    );
  });
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Sends SIGINT and checks the clean stop: exit 0, ports closed, no child left, state removed. */
export async function interruptAndCheck(sandbox: SandboxProcess): Promise<void> {
  const pid = sandbox.child.pid as number;
  const children = await childPids(pid);
  const exited = once(sandbox.child, "exit");
  sandbox.child.kill("SIGINT");
  const [code, signal] = await exited;
  expect({ code, signal, stderr: sandbox.stderr() }).toMatchObject({ code: 0, signal: null });
  expect(sandbox.lines.at(-1)).toBe("stopped");
  const urls = [...sandbox.registrars.values(), ...sandbox.admin.values(), sandbox.console];
  for (const url of urls) {
    expect(await connectionRefused(url), url).toBe(true);
  }
  for (const url of sandbox.agents.values()) {
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  }
  await waitFor(() => children.every((child) => !isRunning(child)), 5_000, "children to exit");
  expect(existsSync(sandbox.stateDir)).toBe(false);
}

/**
 * Stops a sandbox however a test ended: SIGINT (SIGKILL after 10 s), then
 * removes its state directory in case it could not. Idempotent.
 */
export async function stopQuietly(sandbox: SandboxProcess): Promise<void> {
  const { child } = sandbox;
  if (child.exitCode === null && child.signalCode === null) {
    const exited = once(child, "exit");
    child.kill("SIGINT");
    const escalate = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(escalate);
  }
  if (sandbox.stateDir !== "") await rm(sandbox.stateDir, { recursive: true, force: true });
}
