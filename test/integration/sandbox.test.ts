/**
 * The sandbox (`npm start`) as a new user runs it: one OS process started
 * the way the start script does (`node --import tsx services/sandbox/main.ts`),
 * on free ports and over a temp copy of `examples/`. Its printed URLs are
 * read, the agents' route tables checked, an edit of a copied manifest
 * awaited in them, and SIGINT must stop everything: exit 0, every port
 * closed, no child process left, the temp state removed.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { cp, mkdtemp, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { READY_LINE } from "../../services/sandbox/sandbox-banner.js";
import { type EtcdHandle, startEtcd } from "../support/etcd.js";
import { waitFor } from "../support/wait.js";

const ROOT = resolve(import.meta.dirname, "../..");
const MAIN = resolve(ROOT, "services/sandbox/main.ts");

/** An entry of an agent's `/routes` (the fields these tests read). */
interface RoutesEntry {
  readonly service: string;
  readonly source: "local" | "imported";
  readonly origin: string;
  readonly version: string;
  readonly projection: {
    readonly routes?: {
      readonly name?: string;
      readonly rules?: { readonly backends?: { service?: string; weight?: number }[] }[];
    }[];
  };
}

/** A running sandbox process. */
interface SandboxProcess {
  readonly child: ChildProcess;
  /** Every stdout line so far. */
  readonly lines: string[];
  /** Registrar URLs by cluster (hub, east, west). */
  readonly registrars: Map<string, string>;
  /** Agent base URLs by cluster (east, west). */
  readonly agents: Map<string, string>;
  /** The printed state directory. */
  readonly stateDir: string;
  /** Resolves with the first stdout line (present or future) that satisfies `match`. */
  waitForLine(match: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Everything written to stderr so far. */
  stderr(): string;
}

/** Every process the tests spawned, and the sandboxes among them that got ready. */
const started = new Set<ChildProcess>();
const sandboxes = new Set<SandboxProcess>();

/** Starts the sandbox with `args` and resolves once it printed its ready line. */
async function startSandbox(args: readonly string[]): Promise<SandboxProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", MAIN, ...args], {
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
  const agents = new Map<string, string>();
  let stateDir = "";
  for (const line of lines) {
    const registrar = /^ {2}(\w+)\s+(http:\/\/\S+)\s+(control cluster|spoke),/.exec(line);
    if (registrar !== null) registrars.set(registrar[1] as string, registrar[2] as string);
    const agent = /^ {2}(\w+)\s+(http:\/\/\S+)\/routes\s+follows /.exec(line);
    if (agent !== null) agents.set(agent[1] as string, agent[2] as string);
    const state = /^ {2}state: (\S+) /.exec(line);
    if (state !== null) stateDir = state[1] as string;
  }
  const sandbox = { child, lines, registrars, agents, stateDir, waitForLine, stderr: () => stderr };
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

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function routesOf(agentUrl: string): Promise<RoutesEntry[]> {
  const response = await fetch(`${agentUrl}/routes`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { services: RoutesEntry[] }).services;
}

/** The weights of shop/checkout's canary rule in an agent's table. */
function canaryWeights(entries: readonly RoutesEntry[]): Record<string, number | undefined> {
  const checkout = entries.find((e) => e.service === "shop/checkout");
  const canary = checkout?.projection.routes?.find((r) => r.name === "checkout-canary");
  const backends = canary?.rules?.[1]?.backends ?? [];
  return Object.fromEntries(backends.map((b) => [b.service ?? "", b.weight]));
}

/** Sends SIGINT and checks the clean stop: exit 0, ports closed, no child left, state removed. */
async function interruptAndCheck(sandbox: SandboxProcess): Promise<void> {
  const pid = sandbox.child.pid as number;
  const children = await childPids(pid);
  const exited = once(sandbox.child, "exit");
  sandbox.child.kill("SIGINT");
  const [code, signal] = await exited;
  expect({ code, signal, stderr: sandbox.stderr() }).toMatchObject({ code: 0, signal: null });
  expect(sandbox.lines.at(-1)).toBe("stopped");
  for (const url of [...sandbox.registrars.values(), ...sandbox.agents.values()]) {
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  }
  await waitFor(() => children.every((child) => !isRunning(child)), 5_000, "children to exit");
  expect(existsSync(sandbox.stateDir)).toBe(false);
}

/**
 * Stops a sandbox however a test ended: SIGINT (SIGKILL after 10 s), then
 * removes its state directory in case it could not. Idempotent.
 */
async function stopQuietly(sandbox: SandboxProcess): Promise<void> {
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

afterAll(async () => {
  await Promise.all([...sandboxes].map(stopQuietly));
  for (const child of started) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
});

describe("the sandbox (npm start) on the embedded store", () => {
  let examples: string;
  let sandbox: SandboxProcess;

  beforeAll(async () => {
    examples = await mkdtemp(join(tmpdir(), "aether-sandbox-examples-"));
    await cp(resolve(ROOT, "examples"), examples, { recursive: true });
    sandbox = await startSandbox(["--base-port", "0", "--examples", examples]);
  }, 40_000);

  afterAll(async () => {
    if (sandbox !== undefined) await stopQuietly(sandbox);
    await rm(examples, { recursive: true, force: true });
  });

  it("prints a URL for the hub, both spokes and both agents, and each one is ready", async () => {
    expect([...sandbox.registrars.keys()]).toEqual(["hub", "east", "west"]);
    expect([...sandbox.agents.keys()]).toEqual(["east", "west"]);
    for (const url of [...sandbox.registrars.values(), ...sandbox.agents.values()]) {
      expect((await fetch(`${url}/readyz`)).status, url).toBe(200);
    }
    const text = sandbox.lines.join("\n");
    expect(text).toContain("npm run aetherctl -- --registrar");
    expect(text).toContain("npx buf curl --protocol grpc --http2-prior-knowledge");
  });

  it("prints no route rejections and no unreadable manifests for the examples", () => {
    expect(sandbox.lines.filter((line) => line.startsWith("!!"))).toEqual([]);
  });

  it("east's /routes holds its whole dependency set, every service authored by the hub", async () => {
    const entries = await routesOf(sandbox.agents.get("east") as string);
    expect(entries.map((e) => [e.service, e.source, e.origin])).toEqual([
      ["payments/ledger", "imported", "hub"],
      ["shop/cart", "imported", "hub"],
      ["shop/checkout", "imported", "hub"],
    ]);
    expect(canaryWeights(entries)).toEqual({ "shop/checkout-v1": 90, "shop/checkout-v2": 10 });
  });

  it("west's /routes holds its dependency set, with shop/checkout decided by west's local override", async () => {
    const entries = await routesOf(sandbox.agents.get("west") as string);
    expect(entries.map((e) => [e.service, e.source, e.origin])).toEqual([
      ["identity/users", "imported", "hub"],
      ["payments/ledger", "imported", "hub"],
      ["shop/checkout", "local", "west"],
    ]);
    const checkout = entries.find((e) => e.service === "shop/checkout");
    expect(checkout?.projection.routes?.map((r) => r.name)).toEqual(["checkout-west-no-canary"]);
  });

  it("an edit of a manifest under --examples reaches east's /routes within a second; west keeps its local override", async () => {
    const westBefore = await routesOf(sandbox.agents.get("west") as string);
    const file = join(examples, "mesh/shop/checkout-routes.yaml");
    const text = await readFile(file, "utf8");
    expect(text).toContain("weight: 90");
    const edited = text.replace("weight: 90", "weight: 50").replace("weight: 10", "weight: 50");
    const east = sandbox.agents.get("east") as string;
    const fiftyFifty = { "shop/checkout-v1": 50, "shop/checkout-v2": 50 };
    // Saved the way editors do (a new file renamed over the old), so no half-written file is read.
    const temp = join(examples, "mesh/shop/.checkout-routes.yaml.swp");
    await writeFile(temp, edited);
    const t0 = performance.now();
    await rename(temp, file);
    await waitFor(
      async () =>
        JSON.stringify(canaryWeights(await routesOf(east))) === JSON.stringify(fiftyFifty),
      5_000,
      "east's /routes to show the edited weights",
    );
    const elapsedMs = performance.now() - t0;
    expect(elapsedMs).toBeLessThan(1_000);
    await sandbox.waitForLine((line) =>
      line.includes("agent east: shop/checkout: imported from hub"),
    );
    const westAfter = await routesOf(sandbox.agents.get("west") as string);
    expect(westAfter.find((e) => e.service === "shop/checkout")).toEqual(
      westBefore.find((e) => e.service === "shop/checkout"),
    );
  });

  it("SIGINT stops everything: exit 0, every port closed, no child process left, the temp state removed", async () => {
    await interruptAndCheck(sandbox);
  });
});

describe("the sandbox with --store etcd", () => {
  let etcd: EtcdHandle;

  beforeAll(async () => {
    etcd = await startEtcd();
  }, 30_000);

  afterAll(async () => {
    await Promise.all([...sandboxes].map(stopQuietly));
    await etcd?.stop();
  });

  it("runs the same topology on a real etcd: both agents get the hub's config, SIGINT exits 0", async () => {
    const sandbox = await startSandbox([
      "--base-port",
      "0",
      "--store",
      "etcd",
      "--etcd-endpoints",
      etcd.endpoint,
      "--etcd-prefix",
      `/sandbox-test-${process.pid}/aether/v1`,
    ]);
    expect(sandbox.lines[0]).toContain(`on etcd at ${etcd.endpoint}`);
    const east = await routesOf(sandbox.agents.get("east") as string);
    const west = await routesOf(sandbox.agents.get("west") as string);
    expect(east.map((e) => `${e.service} ${e.source} ${e.origin}`)).toEqual([
      "payments/ledger imported hub",
      "shop/cart imported hub",
      "shop/checkout imported hub",
    ]);
    expect(west.map((e) => `${e.service} ${e.source} ${e.origin}`)).toEqual([
      "identity/users imported hub",
      "payments/ledger imported hub",
      "shop/checkout local west",
    ]);
    await interruptAndCheck(sandbox);
  });
});

describe("the sandbox's flags", () => {
  it("exits 2 with the usage text for a bad flag", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", MAIN, "--store", "bogus"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    started.add(child);
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const [code] = await once(child, "exit");
    expect(code).toBe(2);
    expect(stderr).toContain('--store "bogus" must be memory or etcd');
    expect(stderr).toContain("Usage: npm start -- [flags]");
  });
});
