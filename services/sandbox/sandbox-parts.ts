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
import { authorizedIds, registrarIdOf, trustDomainOf } from "./sandbox-identities.js";
import type { SandboxPki } from "./sandbox-pki.js";
import type { SandboxSigning } from "./sandbox-signing.js";
import { HUB_CLUSTER, SPOKES, type SpokeSpec, type sandboxPorts } from "./sandbox-topology.js";

/** Every cluster of the sandbox, the hub first. */
export const CLUSTERS = [HUB_CLUSTER, ...SPOKES.map((spoke) => spoke.cluster)];

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
  /** The PKI of mutual TLS, made before the first registrar starts; undefined: plaintext (`--plaintext`). */
  pki?: SandboxPki;
  /** The hub's signing key and the origin keys; undefined: `--unsigned`. */
  signing?: SandboxSigning;
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
 * The TLS flags of `cluster`'s registrar: its SVID, every cluster's bundle
 * (federation) and whom it authorizes (see `sandbox-identities.ts`).
 */
function registrarTlsFlags(pki: SandboxPki, cluster: string): string[] {
  const svid = pki.svids.get(`${cluster}-registrar`);
  if (svid === undefined) throw new Error(`no SVID for ${cluster}'s registrar`);
  return [
    ...["--tls-cert-file", svid.cert, "--tls-key-file", svid.key],
    ...[...pki.bundles].flatMap(([c, file]) => [
      "--trust-domain-bundle",
      `${trustDomainOf(c)}=${file}`,
    ]),
    ...authorizedIds(cluster, CLUSTERS).flatMap((id) => ["--authorize", id]),
  ];
}

/**
 * The TLS flags of `cluster`'s agent: its SVID, and its registrar's
 * SPIFFE ID checked against its trust domain's bundle.
 */
function agentTlsFlags(pki: SandboxPki, cluster: string): string[] {
  const svid = pki.svids.get(`${cluster}-agent`);
  const bundle = pki.bundles.get(cluster);
  if (svid === undefined || bundle === undefined) throw new Error(`no SVID for ${cluster}'s agent`);
  return [
    ...["--tls-cert-file", svid.cert, "--tls-key-file", svid.key],
    ...["--trust-domain-bundle", `${trustDomainOf(cluster)}=${bundle}`],
    ...["--registrar-spiffe-id", registrarIdOf(cluster)],
  ];
}

/**
 * The signature flags of a part (registrar or agent) of `cluster`: every
 * part verifies with the hub's public key and refuses what does not verify;
 * the hub's registrar also signs.
 */
function signingFlags(
  signing: SandboxSigning | undefined,
  cluster: string,
  role: "registrar" | "agent",
): string[] {
  if (signing === undefined) return [];
  return [
    ...(role === "registrar" && cluster === HUB_CLUSTER
      ? ["--signing-key-file", signing.keyFile]
      : []),
    ...["--origin-keys", signing.originKeysFile, "--require-signatures"],
  ];
}

/** A started registrar's URLs. */
export interface RegistrarUrls {
  /** The ConfigService URL (`https://` with TLS). */
  readonly url: string;
  /** The admin port's URL (plain HTTP: `/healthz`, `/readyz`, `/metrics`). */
  readonly adminUrl: string;
}

/**
 * Starts the registrar of `cluster` on `port` (its admin port on
 * `adminPort`), over mutual TLS when the sandbox has a PKI, exporting
 * `exportDir` when given (the hub), reading its cluster's local config from
 * `localDir` when given (a spoke: published for the fleet's drift), on the
 * shared embedded backend or etcd; returns its URLs.
 */
export async function startRegistrar(
  parts: SandboxParts,
  cluster: string,
  port: number,
  exportDir: string | undefined,
  localDir?: string,
): Promise<RegistrarUrls> {
  const { config, options, pki } = parts;
  const print = options.print;
  const parsed = parseRegistrarFlags([
    "--cluster",
    cluster,
    "--control-cluster",
    HUB_CLUSTER,
    "--listen",
    listenFlag(config.host, port),
    "--admin-listen",
    listenFlag(config.host, parts.ports.admin.get(cluster) ?? 0),
    ...(pki === undefined ? [] : registrarTlsFlags(pki, cluster)),
    ...signingFlags(parts.signing, cluster, "registrar"),
    ...storeFlags(config),
    ...(exportDir === undefined ? [] : ["--export-source", `dir:${exportDir}`]),
    ...(localDir === undefined ? [] : ["--local-source", `dir:${localDir}`]),
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
  return { url: address.url, adminUrl: registrar.adminAddress?.url ?? "" };
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
    ...(parts.pki === undefined ? [] : agentTlsFlags(parts.pki, spoke.cluster)),
    ...signingFlags(parts.signing, spoke.cluster, "agent"),
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
