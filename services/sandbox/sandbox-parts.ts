/**
 * Starting the sandbox's parts: a registrar per cluster (the hub exporting
 * the mesh, on the shared embedded backend or etcd) and an agent per spoke
 * (its cache, route file and local routes under the state directory), each
 * configured through its own flag parser, as its process would be.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { type Agent, createAgent } from "../../clients/agent/agent.js";
import { parseAgentFlags } from "../../clients/agent/agent-flags.js";
import { createRegistrar, type Registrar } from "../registrar/registrar.js";
import { parseRegistrarFlags } from "../registrar/registrar-flags.js";
import {
  createMemoryBackend,
  createMemoryStore,
  type MemoryBackend,
} from "../registrar/store/memory-store.js";
import { createReportedDirSource, type ReportedDirSource } from "./route-problems.js";
import type { SandboxOptions } from "./sandbox.js";
import type { SandboxConfig } from "./sandbox-flags.js";
import { HUB_CLUSTER, type SpokeSpec, type sandboxPorts } from "./sandbox-topology.js";

/** A `--listen` value for `host:port` (an IPv6 host in brackets). */
function listenFlag(host: string, port: number): string {
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** What the sandbox's parts are started with, and where they are kept for stopping. */
export interface SandboxParts {
  readonly config: SandboxConfig;
  readonly options: SandboxOptions;
  readonly ports: ReturnType<typeof sandboxPorts>;
  readonly registrars: Registrar[];
  readonly agents: Agent[];
  readonly sources: ReportedDirSource[];
  /** The embedded store's shared backend, made by the first registrar (memory store only). */
  backend?: MemoryBackend;
}

/** The store flags every sandbox registrar gets. */
function storeFlags(config: SandboxConfig): string[] {
  return [
    "--store",
    config.store,
    "--etcd-prefix",
    config.etcdPrefix,
    ...(config.store === "etcd" ? ["--etcd-endpoints", config.etcdEndpoints.join(",")] : []),
  ];
}

/**
 * Starts the registrar of `cluster` on `port`, exporting `exportDir` when
 * given (the hub), on the shared embedded backend or etcd; returns its URL.
 */
export async function startRegistrar(
  parts: SandboxParts,
  cluster: string,
  port: number,
  exportDir: string | undefined,
): Promise<string> {
  const { config, options } = parts;
  const print = options.print;
  const parsed = parseRegistrarFlags([
    "--cluster",
    cluster,
    "--control-cluster",
    HUB_CLUSTER,
    "--listen",
    listenFlag(config.host, port),
    ...storeFlags(config),
    ...(exportDir === undefined ? [] : ["--export-source", `dir:${exportDir}`]),
  ]);
  if (parsed === "help") throw new Error("unreachable: --help");
  const logger = options.logger({ component: "registrar", cluster });
  parts.backend ??= config.store === "memory" ? createMemoryBackend() : undefined;
  const reported =
    exportDir === undefined
      ? undefined
      : createReportedDirSource({
          path: exportDir,
          label: `${exportDir} (exported by ${cluster})`,
          exportAll: false,
          logger: logger.child({ part: "export-source" }),
          print,
        });
  if (reported !== undefined) parts.sources.push(reported);
  const registrar = createRegistrar({
    config: parsed,
    logger,
    ...(parts.backend === undefined
      ? {}
      : {
          store: createMemoryStore({
            origin: cluster,
            prefix: parsed.etcdPrefix,
            backend: parts.backend,
            logger: logger.child({ part: "store" }),
          }),
        }),
    ...(reported === undefined ? {} : { exportSource: reported.source }),
  });
  parts.registrars.push(registrar);
  const address = await registrar.start();
  return address.url;
}

/**
 * Starts the agent of `spoke` following `registrar`, with its cache, route
 * file and local routes under `stateDir`, and resolves once it started.
 */
export async function startAgent(
  parts: SandboxParts,
  stateDir: string,
  spoke: SpokeSpec,
  registrar: string,
): Promise<Agent> {
  const { config, options, ports } = parts;
  const print = options.print;
  const dir = join(stateDir, spoke.cluster);
  await mkdir(dir, { recursive: true });
  const localDir =
    spoke.localRoutes === undefined ? undefined : join(config.examplesDir, spoke.localRoutes);
  const parsed = parseAgentFlags([
    "--registrar",
    registrar,
    "--cluster",
    spoke.cluster,
    "--control-cluster",
    HUB_CLUSTER,
    "--deps",
    spoke.dependencies.join(","),
    "--cache-dir",
    join(dir, "cache"),
    "--out",
    join(dir, "routes.json"),
    "--listen",
    listenFlag(config.host, ports.agents.get(spoke.cluster) ?? 0),
    ...(localDir === undefined ? [] : ["--local-source", `dir:${localDir}`]),
  ]);
  if (parsed === "help") throw new Error("unreachable: --help");
  const logger = options.logger({ component: "agent", cluster: spoke.cluster });
  const local =
    localDir === undefined
      ? undefined
      : createReportedDirSource({
          path: localDir,
          label: `${localDir} (local routes of ${spoke.cluster})`,
          exportAll: true,
          logger: logger.child({ part: "local-source" }),
          print,
        });
  if (local !== undefined) parts.sources.push(local);
  const agent = createAgent({ ...parsed, localSource: local?.source, logger });
  parts.agents.push(agent);
  await agent.start();
  return agent;
}
