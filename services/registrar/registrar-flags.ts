/**
 * Command-line flags of `aether-registrar`, parsed into a validated
 * configuration. Every problem is reported as a {@link UsageError} whose
 * message names the flag and says what is expected.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { MassDeleteThreshold } from "../common/import-loss.js";
import { checkClusterName } from "../common/service-name.js";
import {
  ETCD_SECURITY_FLAGS,
  parseEtcdSecurityFlags as parseEtcdClientSecurityFlags,
  parseEtcdEndpoints,
} from "../process/etcd-client-flags.js";
import { parseDurationFlag, parseListenFlag, parseLogLevelFlag } from "../process/flag-values.js";
import { parseMassDeleteFlags } from "../process/mass-delete-flags.js";
import { UsageError } from "../process/usage-error.js";
import { readOriginKeysFile } from "../signing/origin-keys-source.js";
import { parseSigningKey } from "../signing/signing-key.js";
import { readWatchedFile } from "../signing/watched-file.js";
import {
  FLEET_FLAG_OPTIONS,
  FLEET_FLAGS_USAGE,
  type FleetFlags,
  kubeconfigFlag,
  parseFleetFlags,
} from "./fleet-flags.js";
import {
  LIMIT_FLAG_OPTIONS,
  LIMIT_FLAGS_USAGE,
  parseLimitFlags,
  type RegistrarLimits,
} from "./limit-flags.js";
import { MIN_PAGE_TOKEN_KEY_BYTES } from "./service/page-token.js";
import { DEFAULT_READ_LIMITS } from "./service/read-admission.js";
import { DEFAULT_STORE_PREFIX, normalizePrefix } from "./store/store-key.js";
import {
  parseTlsFlags,
  type RegistrarTlsConfig,
  TLS_FLAG_OPTIONS,
  TLS_FLAGS_USAGE,
} from "./tls-flag-options.js";

/**
 * The registrar's validated configuration; the limits of its network front
 * and watch streams come from `limit-flags.ts`.
 */
export interface RegistrarConfig extends RegistrarLimits, FleetFlags {
  /** This registrar's cluster: the origin it owns in the store. */
  readonly cluster: string;
  /** The address to listen on. */
  readonly host: string;
  /** The port to listen on (0 picks a free one). */
  readonly port: number;
  /**
   * `--admin-listen`: where the admin port (plain HTTP, `/healthz`,
   * `/readyz` and `/metrics` only) listens; undefined: no admin port (the
   * main port serves those routes either way).
   */
  readonly adminListen: { readonly host: string; readonly port: number } | undefined;
  /**
   * `--tls-cert-file`, `--tls-key-file`, `--trust-domain-bundle` and
   * `--authorize`: how the main port serves TLS; undefined: plaintext.
   */
  readonly tls: RegistrarTlsConfig | undefined;
  /** The store implementation. */
  readonly store: "memory" | "etcd";
  /** etcd endpoints (with `store: "etcd"`). */
  readonly etcdEndpoints: readonly string[];
  /** The store key prefix. */
  readonly etcdPrefix: string;
  /**
   * `--etcd-ca-file`: a PEM bundle of the CAs that may sign etcd's server
   * certificate (implies TLS); undefined: the system trust store with
   * `https://` endpoints, plaintext with `http://` ones.
   */
  readonly etcdCaFile: string | undefined;
  /** `--etcd-cert-file`: the client certificate for etcd (with `etcdKeyFile`). */
  readonly etcdCertFile: string | undefined;
  /** `--etcd-key-file`: the private key of `etcdCertFile`. */
  readonly etcdKeyFile: string | undefined;
  /** `--etcd-username`: the etcd user (with `etcdPasswordFile`); undefined: no etcd auth. */
  readonly etcdUsername: string | undefined;
  /** `--etcd-password-file`: the file holding the etcd user's password. */
  readonly etcdPasswordFile: string | undefined;
  /** The control cluster; undefined means federated. */
  readonly controlCluster: string | undefined;
  /** Keep-alive interval of watch streams, in milliseconds. */
  readonly keepaliveMs: number;
  /** How long SIGTERM waits for open streams and requests before closing them, in milliseconds. */
  readonly drainTimeoutMs: number;
  /** Per-request timeout towards etcd, in milliseconds. */
  readonly storeTimeoutMs: number;
  /** The log level. */
  readonly logLevel: string;
  /** A JSON file of projections to write under the own origin at start (demos). */
  readonly seedFile: string | undefined;
  /** Where the export controller reads Gateway API objects from; undefined: no export. */
  readonly exportSource: ExportSourceConfig | undefined;
  /**
   * The kubeconfig of the `kubernetes` export source and local source;
   * undefined: in-cluster or the default.
   */
  readonly kubeconfig: string | undefined;
  /** The lease TTL of the export leader election (etcd store), in milliseconds. */
  readonly electionTtlMs: number;
  /**
   * `--page-token-key-file`: the file holding the key that authenticates page
   * tokens (shared by replicas behind one Service); undefined: a random key
   * of this process's own.
   */
  readonly pageTokenKeyFile: string | undefined;
  /** How long a page token is accepted, in milliseconds. */
  readonly pageTokenTtlMs: number;
  /** How far ahead of this registrar's clock an imported version may be, in milliseconds. */
  readonly maxVersionSkewMs: number;
  /**
   * `--agent-report-interval`: how often agents report what they applied at
   * the latest (the interval `ReportAppliedConfig` answers), in milliseconds;
   * an agent silent for three intervals is forgotten.
   */
  readonly agentReportIntervalMs: number;
  /**
   * `--list-read-concurrency`: how many store reads list requests may have
   * running at once (the others wait in line or are refused).
   */
  readonly listReadConcurrency: number;
  /**
   * `--list-read-queue`: how many store reads for list requests may wait for
   * a slot; beyond it a request is refused at once with UNAVAILABLE and retry advice.
   */
  readonly listReadQueue: number;
  /**
   * `--mass-delete-threshold` and `--mass-delete-min`: when the deletes of
   * one origin's projections in one store revision (or one re-listing) are
   * held instead of applied.
   */
  readonly massDelete: MassDeleteThreshold;
  /**
   * `--signing-key-file`: the PEM PKCS#8 private key (Ed25519 or ECDSA P-256)
   * the export controller signs every projection with, re-read when it
   * changes; undefined: projections are written unsigned.
   */
  readonly signingKeyFile: string | undefined;
  /**
   * `--origin-keys`: the YAML or JSON file of the origins' public keys
   * imported projections are verified with, re-read when it changes;
   * undefined: none (signatures pass unchecked, unless required).
   */
  readonly originKeysFile: string | undefined;
  /**
   * `--require-signatures`: an imported projection without a valid signature
   * of its origin is refused (`unsigned`, `unknown_key`, `bad_signature`).
   */
  readonly requireSignatures: boolean;
}

/** The export source a registrar reads: a directory of manifests, or the Kubernetes API. */
export type ExportSourceConfig =
  | {
      /** Multi-document YAML files under a directory, recursively. */
      readonly kind: "dir";
      /** The directory. */
      readonly path: string;
    }
  | {
      /** Informers on the Kubernetes API (in-cluster config or `--kubeconfig`). */
      readonly kind: "kubernetes";
    };

/** The `--help` text. */
export const REGISTRAR_USAGE = `Usage: aether-registrar --cluster NAME [flags]

Serves aether.registry.v1.ConfigService (Connect, gRPC and gRPC-Web on one
port) over the shared config store, plus gRPC health and reflection,
/healthz, /readyz and /metrics.

Flags:
  --cluster NAME            this registrar's cluster, the origin it owns (required)
  --listen HOST:PORT        address to serve on (default 127.0.0.1:8080)
  --admin-listen HOST:PORT  also serve /healthz, /readyz and /metrics (only) as plain
                            HTTP on this address, for probes and scrapers: it answers
                            while the main port is full (--max-connections) and needs
                            no client certificate when the main port asks for one
                            (default: none)
  --store memory|etcd       store implementation (default memory: embedded, one process)
  --etcd-endpoints URL[,URL] etcd client URLs (required with --store etcd)
  --etcd-prefix PREFIX      store key prefix (default ${DEFAULT_STORE_PREFIX})
  --etcd-ca-file PATH       PEM CA bundle that verifies etcd's server certificate (TLS:
                            https:// endpoints only; without it, https:// endpoints are
                            verified against the system trust store)
  --etcd-cert-file PATH     PEM client certificate for etcd's --client-cert-auth (TLS:
                            https:// endpoints only; with --etcd-key-file)
  --etcd-key-file PATH      PEM private key of --etcd-cert-file
  --etcd-username NAME      etcd user for etcd authentication (with --etcd-password-file)
  --etcd-password-file PATH file holding that user's password (trailing newline trimmed)
  --control-cluster NAME    trust only this origin (default: federated, trust every origin)
  --keepalive DURATION      keep-alive interval of watch streams (default 15s)
  --drain-timeout DURATION  on SIGTERM, how long open streams may take to end (default 10s)
  --store-timeout DURATION  per-request timeout towards etcd (default 2s)
  --seed FILE               write the projections in FILE ({"projections": [...]}, proto JSON)
                            under this cluster's origin at start (demos and tests)
  --export-source dir:PATH|kubernetes
                            export the routing config of this cluster's exported services,
                            read from a directory of manifests or the Kubernetes API
                            (default: do not export); skipped when --control-cluster names
                            another cluster. With kubernetes, the export leader also writes
                            the status of the routes and policies it projects (controller
                            mesh.aether.dev/registrar)
  --kubeconfig PATH         kubeconfig of --export-source and --local-source kubernetes (default: in-cluster
                            config, else $KUBECONFIG or ~/.kube/config)
  --election-ttl DURATION   lease TTL of the export leader election with --store etcd: a
                            dead leader's replica takes over within it (default 10s)
  --page-token-key-file PATH
                            secret (at least 16 bytes) that authenticates list page tokens;
                            give replicas behind one Service the same file (default: a
                            random key per process, so a token works on its replica only)
  --page-token-ttl DURATION how long a list page token is accepted (default 5m)
  --max-version-skew DURATION
                            reject projections whose version is further ahead of this
                            registrar's clock (version_out_of_range; default 5m)
  --agent-report-interval DURATION
                            agents report what they applied at least this often; one
                            silent for three intervals is forgotten (default 30s, 1s to 1h)
  --list-read-concurrency N most store reads list calls may run at once (default ${DEFAULT_READ_LIMITS.concurrency});
                            list pages come from the synced cache, so only later pages
                            whose window is gone, and lists while unsynced, read the store
  --list-read-queue N       most such reads waiting for a slot, each for at most
                            --store-timeout (default ${DEFAULT_READ_LIMITS.queue}); beyond it a call gets
                            Unavailable with retry advice (Retry-After) at once
  --mass-delete-threshold PERCENT|off
                            hold (keep serving, publish no DELETE, report degraded) the
                            deletes of an origin's projections when more than PERCENT of
                            them vanish in one store revision or one re-listing (default 50%)
  --mass-delete-min N       ... and at least N of them (default 3). Held deletes are
                            released when the origin writes those projections again, or
                            by SIGUSR2 (every hold); a restart forgets them
  --signing-key-file PATH   PEM PKCS#8 private key (Ed25519 or ECDSA P-256) the export
                            controller signs every projection it writes with; re-read
                            when it changes, and a new key re-signs every projection
                            (default: projections are written unsigned)
  --origin-keys PATH        YAML or JSON file of the origins' public keys ({origins: {NAME:
                            [PEM SPKI, ...]}}) imported signatures are verified with; re-read
                            when it changes (a bad re-read keeps the keys in force)
  --require-signatures      refuse imported projections without a valid signature of their
                            origin (unsigned, unknown_key, bad_signature); the last good
                            projection stays. Without it, signatures present are verified
                            and unsigned projections pass (needs --origin-keys)
  --log-level LEVEL         trace, debug, info, warn, error (default info)
  -h, --help                print this help

${TLS_FLAGS_USAGE}
${LIMIT_FLAGS_USAGE}
${FLEET_FLAGS_USAGE}`;

/**
 * Parses the registrar's arguments (without `node` and the script). Returns
 * `"help"` when help was asked for. Throws {@link UsageError} otherwise.
 */
export function parseRegistrarFlags(argv: readonly string[]): RegistrarConfig | "help" {
  let values: Record<string, string | boolean | string[] | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        cluster: { type: "string" },
        listen: { type: "string", default: "127.0.0.1:8080" },
        "admin-listen": { type: "string" },
        store: { type: "string", default: "memory" },
        "etcd-endpoints": { type: "string" },
        "etcd-prefix": { type: "string", default: DEFAULT_STORE_PREFIX },
        "page-token-key-file": { type: "string" },
        "page-token-ttl": { type: "string", default: "5m" },
        "max-version-skew": { type: "string", default: "5m" },
        "agent-report-interval": { type: "string", default: "30s" },
        "mass-delete-threshold": { type: "string", default: "50%" },
        "mass-delete-min": { type: "string", default: "3" },
        "etcd-ca-file": { type: "string" },
        "etcd-cert-file": { type: "string" },
        "etcd-key-file": { type: "string" },
        "etcd-username": { type: "string" },
        "etcd-password-file": { type: "string" },
        "control-cluster": { type: "string", default: "" },
        keepalive: { type: "string", default: "15s" },
        "drain-timeout": { type: "string", default: "10s" },
        "store-timeout": { type: "string", default: "2s" },
        "log-level": { type: "string", default: "info" },
        seed: { type: "string" },
        "export-source": { type: "string" },
        kubeconfig: { type: "string" },
        "election-ttl": { type: "string", default: "10s" },
        "list-read-concurrency": {
          type: "string",
          default: String(DEFAULT_READ_LIMITS.concurrency),
        },
        "list-read-queue": { type: "string", default: String(DEFAULT_READ_LIMITS.queue) },
        "signing-key-file": { type: "string" },
        "origin-keys": { type: "string" },
        "require-signatures": { type: "boolean", default: false },
        help: { type: "boolean", short: "h" },
        ...TLS_FLAG_OPTIONS,
        ...LIMIT_FLAG_OPTIONS,
        ...FLEET_FLAG_OPTIONS,
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help === true) return "help";
  const cluster = values.cluster as string | undefined;
  if (cluster === undefined)
    throw new UsageError("--cluster is required (this registrar's origin)");
  const clusterProblem = checkClusterName(cluster);
  if (clusterProblem !== undefined) throw new UsageError(`--cluster: ${clusterProblem}`);
  const controlCluster = values["control-cluster"] as string;
  if (controlCluster !== "") {
    const problem = checkClusterName(controlCluster);
    if (problem !== undefined) throw new UsageError(`--control-cluster: ${problem}`);
  }
  const store = values.store as string;
  if (store !== "memory" && store !== "etcd") {
    throw new UsageError(`--store ${JSON.stringify(store)} must be memory or etcd`);
  }
  const endpoints = parseEtcdEndpoints(values["etcd-endpoints"] as string | undefined);
  if (store === "etcd" && endpoints.length === 0) {
    throw new UsageError("--store etcd needs --etcd-endpoints URL[,URL]");
  }
  const security = parseEtcdSecurityFlags(values, store, endpoints);
  let prefix: string;
  try {
    prefix = normalizePrefix(values["etcd-prefix"] as string);
  } catch (error) {
    throw new UsageError(`--etcd-prefix: ${(error as Error).message}`);
  }
  const logLevel = parseLogLevelFlag(values["log-level"] as string);
  const keepaliveMs = parseDurationFlag("keepalive", values.keepalive as string);
  if (keepaliveMs < 100) throw new UsageError("--keepalive must be at least 100ms");
  const exportSource = parseExportSource(values["export-source"] as string | undefined);
  const fleet = parseFleetFlags(values);
  const kubeconfig = kubeconfigFlag(values, exportSource?.kind, fleet.localSource?.kind);
  if (exportSource !== undefined && values.seed !== undefined) {
    throw new UsageError(
      "--seed and --export-source both write this cluster's projections; use one of them",
    );
  }
  const electionTtlMs = parseDurationFlag("election-ttl", values["election-ttl"] as string);
  if (electionTtlMs < 1_000) {
    throw new UsageError("--election-ttl must be at least 1s (etcd leases count whole seconds)");
  }
  const pageTokenKeyFile = values["page-token-key-file"] as string | undefined;
  if (pageTokenKeyFile !== undefined) {
    try {
      readPageTokenKey(pageTokenKeyFile);
    } catch (error) {
      throw new UsageError(`--page-token-key-file: ${(error as Error).message}`);
    }
  }
  const pageTokenTtlMs = parseDurationFlag("page-token-ttl", values["page-token-ttl"] as string);
  if (pageTokenTtlMs < 1_000) throw new UsageError("--page-token-ttl must be at least 1s");
  const maxVersionSkewMs = parseDurationFlag(
    "max-version-skew",
    values["max-version-skew"] as string,
  );
  if (maxVersionSkewMs < 1_000) throw new UsageError("--max-version-skew must be at least 1s");
  const agentReportIntervalMs = parseDurationFlag(
    "agent-report-interval",
    values["agent-report-interval"] as string,
    1_000,
  );
  if (agentReportIntervalMs > 3_600_000) {
    throw new UsageError("--agent-report-interval must be at most 1h");
  }
  const listReadConcurrency = parseCountFlag("list-read-concurrency", values, 1);
  const listReadQueue = parseCountFlag("list-read-queue", values, 0);
  const limits = parseLimitFlags(values);
  const signing = parseSigningFlags(values);
  return {
    cluster,
    ...parseListenFlag(values.listen as string),
    adminListen: parseAdminListen(values["admin-listen"] as string | undefined),
    tls: parseTlsFlags(values),
    store,
    etcdEndpoints: endpoints,
    etcdPrefix: prefix,
    ...security,
    controlCluster: controlCluster === "" ? undefined : controlCluster,
    keepaliveMs,
    drainTimeoutMs: parseDurationFlag("drain-timeout", values["drain-timeout"] as string),
    storeTimeoutMs: parseDurationFlag("store-timeout", values["store-timeout"] as string),
    logLevel,
    seedFile: values.seed as string | undefined,
    exportSource,
    kubeconfig,
    electionTtlMs,
    pageTokenKeyFile,
    pageTokenTtlMs,
    maxVersionSkewMs,
    agentReportIntervalMs,
    listReadConcurrency,
    listReadQueue,
    massDelete: parseMassDeleteFlags(
      values["mass-delete-threshold"] as string,
      values["mass-delete-min"] as string,
    ),
    ...limits,
    ...signing,
    ...fleet,
  };
}

/**
 * Checks `--signing-key-file`, `--origin-keys` and `--require-signatures`,
 * reading both files once, so a missing or malformed one is a usage error
 * naming the file (never its contents) rather than a failure later.
 */
function parseSigningFlags(
  values: Record<string, string | boolean | string[] | undefined>,
): Pick<RegistrarConfig, "signingKeyFile" | "originKeysFile" | "requireSignatures"> {
  const signingKeyFile = values["signing-key-file"] as string | undefined;
  const originKeysFile = values["origin-keys"] as string | undefined;
  const requireSignatures = values["require-signatures"] === true;
  if (signingKeyFile !== undefined) {
    try {
      readWatchedFile(signingKeyFile, parseSigningKey);
    } catch (error) {
      throw new UsageError(`--signing-key-file: ${(error as Error).message}`);
    }
  }
  if (originKeysFile !== undefined) {
    try {
      readOriginKeysFile(originKeysFile);
    } catch (error) {
      throw new UsageError(`--origin-keys: ${(error as Error).message}`);
    }
  }
  if (requireSignatures && originKeysFile === undefined) {
    throw new UsageError(
      "--require-signatures needs --origin-keys (the public keys to verify signatures with)",
    );
  }
  return { signingKeyFile, originKeysFile, requireSignatures };
}

/**
 * Reads the count flag `--flag`: a decimal integer of at least `min` (and at
 * most 10000). Throws {@link UsageError} naming the flag otherwise.
 */
function parseCountFlag(
  flag: string,
  values: Record<string, string | boolean | string[] | undefined>,
  min: number,
): number {
  const text = values[flag] as string;
  const count = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(count >= min && count <= 10_000)) {
    throw new UsageError(
      `--${flag} ${JSON.stringify(text)} must be a whole number from ${min} to 10000`,
    );
  }
  return count;
}

/**
 * Reads the page-token key from `path`: the file's bytes, a trailing newline
 * trimmed. Throws an Error (naming the file, never its content) when it
 * cannot be read or holds fewer than 16 bytes.
 */
export function readPageTokenKey(path: string): Buffer {
  let key: Buffer;
  try {
    key = readFileSync(path);
  } catch (error) {
    throw new Error(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? "error"}`);
  }
  let end = key.length;
  while (end > 0 && (key[end - 1] === 0x0a || key[end - 1] === 0x0d)) end--;
  if (end < MIN_PAGE_TOKEN_KEY_BYTES) {
    throw new Error(`${path} holds ${end} bytes; a key needs at least ${MIN_PAGE_TOKEN_KEY_BYTES}`);
  }
  return key.subarray(0, end);
}

/**
 * Checks the etcd TLS and authentication flags against the store (they need
 * `--store etcd`) and the endpoints, and reads their files once (so a
 * missing, unreadable, empty or malformed file is a usage error now rather
 * than a failure later); see `services/process/etcd-client-flags.ts`.
 */
function parseEtcdSecurityFlags(
  values: Record<string, string | boolean | string[] | undefined>,
  store: "memory" | "etcd",
  endpoints: readonly string[],
): Pick<
  RegistrarConfig,
  "etcdCaFile" | "etcdCertFile" | "etcdKeyFile" | "etcdUsername" | "etcdPasswordFile"
> {
  const given = ETCD_SECURITY_FLAGS.find((flag) => values[flag] !== undefined);
  if (given !== undefined && store !== "etcd") {
    throw new UsageError(`--${given} is only used with --store etcd`);
  }
  return parseEtcdClientSecurityFlags(values, endpoints);
}

function parseExportSource(value: string | undefined): ExportSourceConfig | undefined {
  if (value === undefined) return undefined;
  if (value === "kubernetes") return { kind: "kubernetes" };
  if (value.startsWith("dir:") && value.length > "dir:".length) {
    return { kind: "dir", path: value.slice("dir:".length) };
  }
  throw new UsageError(
    `--export-source ${JSON.stringify(value)} must be dir:PATH (a directory of manifests) or kubernetes`,
  );
}

/** Parses `--admin-listen HOST:PORT`; undefined when it is not given. */
function parseAdminListen(value: string | undefined): { host: string; port: number } | undefined {
  if (value === undefined) return undefined;
  try {
    return parseListenFlag(value, "127.0.0.1:9090");
  } catch (error) {
    throw new UsageError(`--admin-${(error as Error).message.slice(2)}`);
  }
}
