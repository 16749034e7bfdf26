import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "./wait.js";

/** A running single-member etcd started by {@link startEtcd}. */
export interface EtcdHandle {
  /** The client URL, for example `http://127.0.0.1:40123`. */
  readonly endpoint: string;
  /**
   * Kills etcd and removes its data directory. Idempotent: later calls
   * resolve at once.
   */
  stop(): Promise<void>;
  /**
   * Freezes the process with SIGSTOP (connections stay open, nothing answers)
   * and resolves once every thread of it has stopped: the signal takes effect
   * asynchronously, and a request sent right after `kill` may still be served.
   */
  pause(): Promise<void>;
  /** Thaws a process frozen by {@link EtcdHandle.pause} with SIGCONT; resolves once it runs. */
  resume(): Promise<void>;
  /**
   * Kills the process (a crash, SIGKILL) and starts it again on the same
   * ports and the same data directory, so the data and revisions survive.
   * Resolves once the new process is healthy.
   */
  restart(): Promise<void>;
}

/** Options of {@link startEtcd}. */
export interface StartEtcdOptions {
  /** The etcd binary; default `$ETCD_BIN` or `/usr/bin/etcd`. */
  readonly binary?: string;
  /** How long to wait for etcd to become healthy; default 20 s. */
  readonly readyTimeoutMs?: number;
  /** The scheme of the client URLs; default `http` (`https` needs TLS flags in `extraArgs`). */
  readonly clientScheme?: "http" | "https";
  /** More etcd flags (TLS, for example). */
  readonly extraArgs?: readonly string[];
  /** Whether etcd at a client URL is healthy; default an unauthenticated GET of `/health`. */
  readonly isHealthy?: (endpoint: string) => Promise<boolean>;
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/**
 * Tracks an etcd child process: a process exit kills it (even after a failed
 * test) unless {@link killEtcdProcess} already reaped it.
 */
export function trackEtcdProcess(child: ChildProcess): void {
  installExitHook();
  running.add(child);
}

/** Kills every etcd this process started when the process exits, even after a failed test. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const child of running) child.kill("SIGKILL");
  });
}

/** Returns a TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port assigned");
  return address.port;
}

/** Resolves true when etcd's /health endpoint says it is healthy (it has a leader and quorum). */
export async function isHealthy(endpoint: string): Promise<boolean> {
  try {
    const response = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(1_000) });
    const body = (await response.json()) as { health?: unknown };
    return response.ok && body.health === "true";
  } catch {
    return false;
  }
}

/**
 * Reports whether every thread of `pid` is stopped (state `T` in
 * /proc/<pid>/task/<tid>/stat); false when the process is gone.
 */
export async function isStopped(pid: number): Promise<boolean> {
  try {
    const tasks = await readdir(`/proc/${pid}/task`);
    const states = await Promise.all(
      tasks.map(async (tid) => {
        const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, "utf8");
        return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      }),
    );
    return states.every((state) => state === "T");
  } catch {
    return false;
  }
}

/** Kills `child` with SIGKILL (works on a stopped process too) and waits for it to exit. */
export async function killEtcdProcess(child: ChildProcess): Promise<void> {
  if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    await exited;
  }
  running.delete(child);
}

/**
 * Returns the etcd binary to run (`binary`, else `$ETCD_BIN`, else
 * `/usr/bin/etcd`); throws an Error explaining how to install etcd when it
 * is not executable.
 */
export function etcdBinary(binary = process.env.ETCD_BIN ?? "/usr/bin/etcd"): string {
  try {
    accessSync(binary, constants.X_OK);
  } catch {
    throw new Error(
      `etcd binary ${binary} not found; install it with \`apt-get install -y etcd-server\` (or set ETCD_BIN)`,
    );
  }
  return binary;
}

/**
 * Starts a real single-member etcd (Debian's etcd-server 3.4) on free loopback
 * ports with a fresh data directory and resolves once it is healthy. Throws an
 * Error explaining how to install etcd when the binary is missing, and an Error
 * with etcd's last output when it exits or does not become healthy in time.
 * Callers stop it in `afterAll`; a process exit kills it as a last resort.
 */
export async function startEtcd(options: StartEtcdOptions = {}): Promise<EtcdHandle> {
  const binary = etcdBinary(options.binary);
  const readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const dataDir = await mkdtemp(join(tmpdir(), "aether-etcd-"));
  const clientUrl = `${options.clientScheme ?? "http"}://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const args = [
    "--name=default",
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=default=${peerUrl}`,
    "--initial-cluster-state=new",
    "--logger=zap",
    "--log-level=error",
    ...(options.extraArgs ?? []),
  ];

  let child: ChildProcess | undefined;
  let output = "";
  let stopped = false;

  const launch = async (): Promise<void> => {
    output = "";
    const process_ = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
    child = process_;
    trackEtcdProcess(process_);
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString("utf8")).slice(-4_000);
    };
    process_.stdout?.on("data", keep);
    process_.stderr?.on("data", keep);
    process_.on("error", (error) => {
      output += `\nspawn error: ${error.message}`;
    });
    const hasExited = () => process_.exitCode !== null || process_.signalCode !== null;
    try {
      await waitFor(
        async () => hasExited() || (await (options.isHealthy ?? isHealthy)(clientUrl)),
        readyTimeoutMs,
        `etcd at ${clientUrl} to become healthy`,
        50,
      );
      if (hasExited()) throw new Error("etcd exited");
    } catch (error) {
      await killEtcdProcess(process_);
      throw new Error(`etcd did not start: ${String(error)}\n${output}`, { cause: error });
    }
  };

  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    if (child) await killEtcdProcess(child);
    await rm(dataDir, { recursive: true, force: true });
  };

  try {
    await launch();
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }

  return {
    endpoint: clientUrl,
    stop,
    pause: async () => {
      const pid = child?.pid;
      if (pid === undefined || stopped) return;
      child?.kill("SIGSTOP");
      await waitFor(() => isStopped(pid), 5_000, "etcd to stop", 1);
    },
    resume: async () => {
      const pid = child?.pid;
      if (pid === undefined || stopped) return;
      child?.kill("SIGCONT");
      await waitFor(async () => !(await isStopped(pid)), 5_000, "etcd to continue", 1);
    },
    restart: async () => {
      if (stopped) throw new Error("etcd was stopped; it cannot be restarted");
      if (child) await killEtcdProcess(child);
      await launch();
    },
  };
}
