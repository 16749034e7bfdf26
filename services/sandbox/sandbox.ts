/**
 * The sandbox as a library: the whole multi-cluster topology of
 * `sandbox-topology.ts` in ONE process. `main.ts` is only flags, printing
 * and signals around this.
 *
 * - `store: "memory"`: every registrar gets its own embedded store over ONE
 *   shared memory backend (as registrars of several clusters share one etcd),
 *   so the hub's export reaches the spokes without any etcd.
 * - `store: "etcd"`: every registrar gets its own etcd store (and the hub an
 *   etcd leader election for its exporter) on the given endpoints, still in
 *   this process.
 *
 * With `tls` (the default) every ConfigService port serves mutual TLS with
 * the SPIFFE identities of `sandbox-identities.ts`, from the PKI of
 * `sandbox-pki.ts`; each registrar's probes and metrics are also on a plain
 * HTTP admin port.
 *
 * The console (`sandbox-console.ts`: `aetherctl dashboard`'s server) serves
 * the web UI and forwards its calls to the hub as the operator.
 *
 * The hub exports the manifests under `EXAMPLES/mesh` (re-read on change);
 * each spoke's agent follows its spoke registrar with its own dependency set,
 * a last-known cache and a route-table file under the state directory; a
 * spoke with local routes reads them from `EXAMPLES/<localRoutes>`. Bad
 * manifests are printed loudly (see `route-problems.ts`), and every change of
 * an agent's route table is printed as it happens.
 */
import { mkdir, mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DashboardServer } from "../../clients/aetherctl/dashboard/dashboard-server.js";
import type { Agent } from "../../clients/agent/agent.js";
import type { RouteTable } from "../common/route-merge.js";
import type { Registrar } from "../registrar/registrar.js";
import type { Logger } from "../runtime/logger.js";
import { type OperatorEnvFile, writeOperatorEnv } from "./operator-env-file.js";
import type { ReportedDirSource } from "./route-problems.js";
import { describeRouteTableChanges } from "./route-table-changes.js";
import { createSandboxConsole } from "./sandbox-console.js";
import type { SandboxConfig } from "./sandbox-flags.js";
import { CLUSTERS, type SandboxParts, startAgent, startRegistrar } from "./sandbox-parts.js";
import { ensureSandboxPki, type SandboxPki } from "./sandbox-pki.js";
import { ensureSandboxSigning, type SandboxSigning } from "./sandbox-signing.js";
import { HUB_CLUSTER, MESH_DIR, SPOKES, type SpokeSpec, sandboxPorts } from "./sandbox-topology.js";

/** How long the registrars may take to sync with the store before the start fails. */
const STORE_SYNC_TIMEOUT_MS = 15_000;
/** How long the agents may take to hold config for their whole dependency set (then a note). */
const COVERAGE_TIMEOUT_MS = 5_000;

/**
 * The console's server, made once the agents run: its Explain view reads
 * their route tables (`/agents/<cluster>/routes`).
 */
function consoleAfterAgents(
  parts: SandboxParts,
  hubUrl: string,
  started: readonly { readonly spoke: SpokeSpec; readonly agent: Agent }[],
): Promise<DashboardServer> {
  const agents = started.map(({ spoke, agent }): [string, string] => [
    spoke.cluster,
    agent.address?.url ?? "",
  ]);
  return createSandboxConsole(parts, hubUrl, { agents: new Map(agents) });
}

/** Options of {@link createSandbox}. */
export interface SandboxOptions {
  /** The validated configuration (see `parseSandboxFlags`). */
  readonly config: SandboxConfig;
  /** Where human-readable lines go (problems, route table changes). */
  readonly print: (line: string) => void;
  /** Creates the logger of one part, for example `{component: "agent", cluster: "east"}`. */
  readonly logger: (base: Record<string, string>) => Logger;
}

/** A registrar of the running sandbox. */
export interface SandboxRegistrarInfo {
  /** Its cluster. */
  readonly cluster: string;
  /** `hub` (the control cluster, exporting) or `spoke` (importing). */
  readonly role: "hub" | "spoke";
  /** Its base URL (`https://` with TLS). */
  readonly url: string;
  /** Its admin port's URL (plain HTTP `/healthz`, `/readyz`, `/metrics`). */
  readonly adminUrl: string;
}

/** An agent of the running sandbox. */
export interface SandboxAgentInfo {
  /** The spoke it runs in. */
  readonly cluster: string;
  /** Its endpoint's base URL (`/routes`, `/readyz`, `/metrics`). */
  readonly url: string;
  /** The URL of the spoke registrar it follows. */
  readonly registrar: string;
  /** Its dependency set. */
  readonly dependencies: readonly string[];
  /** Its local routes directory, or undefined. */
  readonly localRoutes: string | undefined;
  /** The file its route table is written to. */
  readonly outFile: string;
  /** Services of its dependency set it had no config for when the start finished. */
  readonly missing: readonly string[];
  /** Its route table when the start finished (undefined: none yet). */
  readonly table: RouteTable | undefined;
}

/** What the running sandbox consists of. */
export interface SandboxInfo {
  /** The store kind. */
  readonly store: "memory" | "etcd";
  /** The etcd endpoints (with `store: "etcd"`). */
  readonly etcdEndpoints: readonly string[];
  /** The directory the hub exports. */
  readonly meshDir: string;
  /** The hub first, then the spokes. */
  readonly registrars: readonly SandboxRegistrarInfo[];
  /** One per spoke. */
  readonly agents: readonly SandboxAgentInfo[];
  /** Where the agents keep their caches and route tables. */
  readonly stateDir: string;
  /** Whether the state directory is removed when the sandbox stops. */
  readonly stateIsTemporary: boolean;
  /** The PKI every ConfigService connection's mutual TLS uses; undefined: `--plaintext`. */
  readonly pki: SandboxPki | undefined;
  /** The hub's signing key and the importers' origin keys; undefined: `--unsigned`. */
  readonly signing: SandboxSigning | undefined;
  /** The operator's environment file for aetherctl, written at this start; undefined: `--plaintext`. */
  readonly operatorEnv: OperatorEnvFile | undefined;
  /** The console's URL: the dashboard server forwarding to the hub as the operator. */
  readonly console: string;
}

/** The sandbox; see the module comment. */
export interface Sandbox {
  /**
   * Starts the registrars, waits until they are synced with the store, then
   * starts the agents and waits (bounded) until each holds config for its
   * dependency set. Rejects when something cannot start (a port in use, a
   * missing examples directory, a store that does not answer); call `stop()`
   * then too.
   */
  start(): Promise<SandboxInfo>;
  /**
   * Stops everything it started (the console, the agents, then the registrars) and
   * removes a temporary state directory. Aborts a start in progress.
   * Idempotent; never rejects.
   */
  stop(): Promise<void>;
}

/** Resolves with `promise`, or with `"timeout"` after `ms`; rejects when `signal` aborts. */
async function within<T>(
  promise: Promise<T>,
  ms: number,
  signal: AbortSignal,
): Promise<T | "timeout"> {
  signal.throwIfAborted();
  let cancel = () => {};
  const timeout = new Promise<"timeout">((resolve, reject) => {
    const id = setTimeout(() => resolve("timeout"), ms);
    const onAbort = () => {
      clearTimeout(id);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    cancel = () => {
      clearTimeout(id);
      signal.removeEventListener("abort", onAbort);
    };
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    cancel();
  }
}

/** The dependencies `table` has no entry for. */
function missingFrom(table: RouteTable | undefined, dependencies: readonly string[]): string[] {
  const present = new Set((table?.services ?? []).map((entry) => entry.service));
  return dependencies.filter((service) => !present.has(service));
}

/** Waits (at most `ms`) until `agent` holds config for every dependency; returns what is missing. */
async function awaitCoverage(
  agent: Agent,
  dependencies: readonly string[],
  ms: number,
  signal: AbortSignal,
): Promise<string[]> {
  const done = AbortSignal.any([signal, AbortSignal.timeout(ms)]);
  for await (const table of agent.updates({ signal: done })) {
    if (missingFrom(table, dependencies).length === 0) break;
  }
  signal.throwIfAborted();
  return missingFrom(agent.table, dependencies);
}

async function checkDirectory(path: string, what: string): Promise<void> {
  const found = await stat(path).catch(() => undefined);
  if (found?.isDirectory() !== true) {
    throw new Error(`${what} ${path} is not a directory (choose the examples with --examples DIR)`);
  }
}

/** Creates the sandbox; nothing runs until `start()`. */
export function createSandbox(options: SandboxOptions): Sandbox {
  const { config, print } = options;
  const ports = sandboxPorts(config.basePort);
  const meshDir = join(config.examplesDir, MESH_DIR);
  const aborted = new AbortController();
  const registrars: Registrar[] = [];
  const agents: Agent[] = [];
  const sources: ReportedDirSource[] = [];
  const unsubscribe: (() => void)[] = [];
  let stateDir = config.stateDir;
  let consoleServer: DashboardServer | undefined;
  let starting: Promise<SandboxInfo> | undefined;
  let stopping: Promise<void> | undefined;

  const parts: SandboxParts = { config, options, ports, registrars, agents, sources };

  /** Prints every later change of the agent's route table, one line per service. */
  const printChanges = (cluster: string, agent: Agent) => {
    let previous = agent.table;
    unsubscribe.push(
      agent.onUpdate((table) => {
        const time = new Date().toISOString().slice(11, 23);
        for (const line of describeRouteTableChanges(previous, table)) {
          print(`${time}  agent ${cluster}: ${line}`);
        }
        previous = table;
      }),
    );
  };

  const run = async (): Promise<SandboxInfo> => {
    const signal = aborted.signal;
    let operatorEnv: OperatorEnvFile | undefined;
    await checkDirectory(meshDir, "the mesh directory");
    for (const spoke of SPOKES) {
      if (spoke.localRoutes !== undefined) {
        await checkDirectory(
          join(config.examplesDir, spoke.localRoutes),
          "the local routes directory",
        );
      }
      await checkDirectory(
        join(config.examplesDir, spoke.localConfig),
        "the local config directory",
      );
    }
    if (config.tls) {
      const spokes = SPOKES.map((spoke) => spoke.cluster);
      parts.pki = await ensureSandboxPki(config.pkiDir, CLUSTERS, spokes, config.host);
    }
    if (config.signingDir !== undefined) {
      parts.signing = await ensureSandboxSigning(config.signingDir, HUB_CLUSTER);
    }
    if (parts.pki !== undefined) operatorEnv = await writeOperatorEnv(parts.pki, parts.signing);
    stateDir ??= await mkdtemp(join(tmpdir(), "aether-sandbox-"));
    await mkdir(stateDir, { recursive: true });

    const registrarInfo: SandboxRegistrarInfo[] = [
      {
        cluster: HUB_CLUSTER,
        role: "hub",
        ...(await startRegistrar(parts, HUB_CLUSTER, ports.hub, meshDir)),
      },
    ];
    for (const spoke of SPOKES) {
      signal.throwIfAborted();
      const port = ports.registrars.get(spoke.cluster) ?? 0;
      const local = join(config.examplesDir, spoke.localConfig);
      const urls = await startRegistrar(parts, spoke.cluster, port, undefined, local);
      registrarInfo.push({ cluster: spoke.cluster, role: "spoke", ...urls });
    }
    const synced = await within(
      Promise.all(registrars.map((registrar) => registrar.cache.whenSynced())),
      STORE_SYNC_TIMEOUT_MS,
      signal,
    );
    if (synced === "timeout") {
      const late = registrarInfo.filter((_, i) => registrars[i]?.cache.state !== "synced");
      const store =
        config.store === "etcd" ? `etcd at ${config.etcdEndpoints.join(",")}` : "the store";
      throw new Error(
        `registrar ${late.map((r) => r.cluster).join(", ")} did not sync with ${store} within ${STORE_SYNC_TIMEOUT_MS / 1000}s`,
      );
    }

    const started: { spoke: SpokeSpec; agent: Agent; registrar: string }[] = [];
    for (const [i, spoke] of SPOKES.entries()) {
      signal.throwIfAborted();
      const registrar = registrarInfo[i + 1]?.url as string;
      started.push({
        spoke,
        agent: await startAgent(parts, stateDir, spoke, registrar),
        registrar,
      });
    }
    const missing = await Promise.all(
      started.map(({ spoke, agent }) =>
        awaitCoverage(agent, spoke.dependencies, COVERAGE_TIMEOUT_MS, signal),
      ),
    );
    for (const { spoke, agent } of started) printChanges(spoke.cluster, agent);
    consoleServer = await consoleAfterAgents(parts, registrarInfo[0]?.url as string, started);
    const consoleUrl = await consoleServer.start();
    return {
      store: config.store,
      etcdEndpoints: config.etcdEndpoints,
      meshDir,
      registrars: registrarInfo,
      agents: started.map(({ spoke, agent, registrar }, i) => ({
        cluster: spoke.cluster,
        url: agent.address?.url ?? "",
        registrar,
        dependencies: spoke.dependencies,
        localRoutes:
          spoke.localRoutes === undefined ? undefined : join(config.examplesDir, spoke.localRoutes),
        outFile: join(stateDir as string, spoke.cluster, "routes.json"),
        missing: missing[i] ?? [],
        table: agent.table,
      })),
      stateDir,
      stateIsTemporary: config.stateDir === undefined,
      pki: parts.pki,
      signing: parts.signing,
      operatorEnv,
      console: consoleUrl,
    };
  };

  const shutdown = async (): Promise<void> => {
    aborted.abort(new Error("the sandbox is stopping"));
    await starting?.catch(() => undefined);
    for (const off of unsubscribe.splice(0)) off();
    for (const reported of sources) reported.stopReporting();
    await consoleServer?.close();
    await Promise.allSettled(agents.map((agent) => agent.stop()));
    // Spokes first: the hub's exporter resigns last, nothing is left reading it.
    await Promise.allSettled(registrars.slice(1).map((registrar) => registrar.stop()));
    await Promise.allSettled(registrars.slice(0, 1).map((registrar) => registrar.stop()));
    if (config.stateDir === undefined && stateDir !== undefined) {
      await rm(stateDir, { recursive: true, force: true });
    }
  };

  return {
    start() {
      if (stopping !== undefined) return Promise.reject(new Error("the sandbox was stopped"));
      starting ??= run();
      return starting;
    },
    stop() {
      stopping ??= shutdown();
      return stopping;
    },
  };
}
