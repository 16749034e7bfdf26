/**
 * Helpers of the e2e suite (test/e2e): registrars of named clusters as OS
 * processes, copies of examples/ a test may edit, reading a projection the
 * way each side sees it (a registrar's EFFECTIVE view, an agent's /routes),
 * and deciding a request on it with the shared evaluator.
 */
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Etcd3 } from "etcd3";
import { ConfigService, ConfigView } from "../../gen/aether/registry/v1/config_service_pb.js";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { type Decision, type EvaluatorRequest, evaluate } from "../../services/common/evaluator.js";
import type { AgentProcess } from "./agent-process.js";
import {
  agentMtlsFlags,
  clientTlsOptions,
  type MeshPki,
  registrarMtlsFlags,
} from "./e2e-mesh-pki.js";
import { readRawProjections, setCanaryWeights, versionsOf } from "./export-store.js";
import { type RegistrarProcess, startRegistrarProcess } from "./registrar-process.js";
import { waitFor } from "./wait.js";

/** The repository's examples/ directory. */
export const EXAMPLES = resolve(import.meta.dirname, "../../examples");

/** A temporary copy of a directory. */
export interface TempCopy {
  readonly path: string;
  remove(): Promise<void>;
}

/** Copies `source` (for example `join(EXAMPLES, "mesh")`) into a fresh temporary directory. */
export async function tempCopy(source: string): Promise<TempCopy> {
  const path = await mkdtemp(join(tmpdir(), "aether-e2e-"));
  await cp(source, path, { recursive: true });
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** Options of {@link startClusterRegistrar}. */
export interface ClusterRegistrarOptions {
  /** The etcd client URL. */
  readonly endpoint: string;
  /** The store prefix of the test. */
  readonly prefix: string;
  /** The registrar's cluster (its origin). */
  readonly cluster: string;
  /** `--control-cluster`; undefined: federated. */
  readonly controlCluster?: string;
  /** `--export-source dir:<exportDir>`; undefined: no export. */
  readonly exportDir?: string;
  /** More flags. */
  readonly extra?: readonly string[];
  /** Serve mutual TLS with this PKI's SVID of `cluster` (see registrarMtlsFlags); undefined: plaintext. */
  readonly tls?: MeshPki;
}

/** A registrar of a named cluster, and how an agent follows it. */
export interface ClusterRegistrar extends RegistrarProcess {
  readonly cluster: string;
  /**
   * `--registrar <url>` for an agent of `agentCluster`, and over mutual TLS
   * that agent's SVID, the bundles and this registrar's SPIFFE ID.
   */
  agentFlags(agentCluster: string): string[];
}

/** Node TLS options of this process's clients, by registrar URL (https:// only); see configClient. */
const tlsClients = new Map<string, ReturnType<typeof clientTlsOptions>>();

/**
 * Starts a registrar of `cluster` over etcd (1 s store timeout, 2 s election
 * TTL), plaintext or, with `options.tls`, mutual TLS; {@link configClient}
 * then reaches it with the operator's SVID.
 */
export async function startClusterRegistrar(
  options: ClusterRegistrarOptions,
): Promise<ClusterRegistrar> {
  const { tls, cluster } = options;
  const registrar = await startRegistrarProcess([
    "--cluster",
    options.cluster,
    "--store",
    "etcd",
    "--etcd-endpoints",
    options.endpoint,
    "--etcd-prefix",
    options.prefix,
    "--store-timeout",
    "1s",
    "--election-ttl",
    "2s",
    ...(options.controlCluster === undefined ? [] : ["--control-cluster", options.controlCluster]),
    ...(options.exportDir === undefined ? [] : ["--export-source", `dir:${options.exportDir}`]),
    ...(options.extra ?? []),
    ...(tls === undefined ? [] : registrarMtlsFlags(tls, cluster)),
  ]);
  if (tls !== undefined) tlsClients.set(registrar.url, clientTlsOptions(tls, cluster));
  return {
    ...registrar,
    cluster,
    agentFlags: (agentCluster) => [
      ...["--registrar", registrar.url],
      ...(tls === undefined ? [] : agentMtlsFlags(tls, agentCluster, cluster)),
    ],
  };
}

/**
 * A ConfigService client of a registrar (Connect over HTTP/1.1, a fresh
 * connection per call); an https:// URL presents the operator's SVID that
 * {@link startClusterRegistrar} set up for it.
 */
export function configClient(url: string): Client<typeof ConfigService> {
  if (!url.startsWith("https:")) {
    return createClient(
      ConfigService,
      createConnectTransport({ baseUrl: url, httpVersion: "1.1" }),
    );
  }
  const tls = tlsClients.get(url);
  if (tls === undefined) throw new Error(`no TLS client options for ${url}`);
  const nodeOptions = { ...tls, agent: false as const };
  return createClient(
    ConfigService,
    createConnectTransport({ baseUrl: url, httpVersion: "1.1", nodeOptions }),
  );
}

/** The registrar's EFFECTIVE projection of `service` (ListAllConfig), or undefined. */
export async function effectiveProjection(
  url: string,
  service: string,
): Promise<ServiceConfigProjection | undefined> {
  const response = await configClient(url).listAllConfig({
    services: [service],
    view: ConfigView.EFFECTIVE,
  });
  return response.projections.find((p) => p.service === service);
}

/** The projection the agent applied for `service` (from /routes), or undefined. */
export async function agentProjection(
  agent: AgentProcess,
  service: string,
): Promise<ServiceConfigProjection | undefined> {
  const entry = (await agent.routes()).find((e) => e.service === service);
  if (entry === undefined) return undefined;
  return fromJson(ServiceConfigProjectionSchema, entry.projection as unknown as JsonValue, {
    ignoreUnknownFields: true,
  });
}

/** One request of a decision table: where it goes and what it is. */
export interface MeshCase {
  /** A label for failure messages. */
  readonly name: string;
  /** The destination Service, `namespace/name`. */
  readonly service: string;
  /** The Service port dialled; default 8080. */
  readonly port?: number;
  /** The caller's namespace; default `client`. */
  readonly callerNamespace?: string;
  /** The request. */
  readonly request: EvaluatorRequest;
  /** The evaluator's random draw for weighted backends; default 0. */
  readonly random?: number;
}

/** Decides `c` on `projection` with the shared evaluator, as a caller's proxy would. */
export function decide(projection: ServiceConfigProjection | undefined, c: MeshCase): Decision {
  return evaluate({
    projections: projection === undefined ? [] : [projection],
    request: c.request,
    mesh: {
      service: c.service,
      port: c.port ?? 8080,
      callerNamespace: c.callerNamespace ?? "client",
    },
    random: () => c.random ?? 0,
  });
}

/** An HTTP request of a decision table. */
export function http(
  method: string,
  host: string,
  path: string,
  headers: Record<string, string> = {},
): EvaluatorRequest {
  return { kind: "http", method, host, path, headers };
}

/** Whether `url`/healthz answers 200. */
export async function healthz(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

/** `origin@version` of the winner a registrar's EFFECTIVE view or an agent holds. */
export function winnerOf(projection: ServiceConfigProjection | undefined): string {
  return projection === undefined ? "none" : `${projection.originCluster}@${projection.version}`;
}

/** The version of each of `services` in a registrar's EFFECTIVE view ("none" when absent). */
export async function effectiveVersions(
  url: string,
  services: readonly string[],
): Promise<Record<string, string>> {
  const entries = await Promise.all(
    services.map(async (s) => [s, (await effectiveProjection(url, s))?.version ?? "none"]),
  );
  return Object.fromEntries(entries);
}

/** The version of every service in an agent's route table, by service. */
export async function agentVersions(agent: AgentProcess): Promise<Record<string, string>> {
  return Object.fromEntries((await agent.routes()).map((e) => [e.service, e.version]));
}

/** Whether two `service -> version` records are equal, whatever their key order. */
export function sameVersions(a: Record<string, string>, b: Record<string, string>): boolean {
  const flat = (r: Record<string, string>) =>
    Object.entries(r)
      .map(([s, v]) => `${s}@${v}`)
      .sort()
      .join();
  return flat(a) === flat(b);
}

/**
 * Waits until `agent` holds exactly the version of each of `services` that the
 * registrar at `url` has in its EFFECTIVE view; resolves with those versions.
 */
export async function convergedTo(
  url: string,
  services: readonly string[],
  agent: AgentProcess,
  what: string,
  timeoutMs = 10_000,
): Promise<Record<string, string>> {
  let expected: Record<string, string> = {};
  await waitFor(
    async () => {
      expected = await effectiveVersions(url, services);
      return sameVersions(await agentVersions(agent), expected);
    },
    timeoutMs,
    what,
  );
  return expected;
}

/**
 * Edits the checkout canary weights in the hub's manifest copy at `meshPath`
 * and resolves with the new version the hub stores under `prefix`.
 */
export async function editCanaryOnHub(
  raw: Etcd3,
  prefix: string,
  meshPath: string,
  stable: number,
  canary: number,
): Promise<string> {
  const stored = async () =>
    versionsOf(await readRawProjections(raw, prefix, "hub"))["shop/checkout"];
  const before = await stored();
  await setCanaryWeights(meshPath, stable, canary);
  let after: string | undefined;
  await waitFor(
    async () => {
      after = await stored();
      return after !== undefined && after !== before;
    },
    10_000,
    `the hub to export the ${stable}/${canary} edit`,
  );
  return after as string;
}
