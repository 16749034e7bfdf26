/**
 * Command-line flags of `aether-agent`, parsed into a validated
 * configuration. Every problem is reported as a {@link UsageError} whose
 * message names the flag and says what is expected, the way the registrar's
 * flags are.
 */
import { hostname } from "node:os";
import { type ParseArgsConfig, parseArgs } from "node:util";
import {
  type AgentIdSources,
  checkAgentId,
  defaultAgentId,
} from "../../services/common/agent-id.js";
import type { MassDeleteThreshold } from "../../services/common/import-loss.js";
import { checkClusterName, checkServiceName } from "../../services/common/service-name.js";
import {
  CLIENT_TLS_OPTIONS,
  CLIENT_TLS_USAGE,
  type ClientTlsConfig,
  type ClientTlsFlagValues,
  parseClientTlsFlags,
} from "../../services/process/client-tls-flags.js";
import {
  parseDurationFlag,
  parseListenFlag,
  parseLogLevelFlag,
} from "../../services/process/flag-values.js";
import { parseMassDeleteFlags } from "../../services/process/mass-delete-flags.js";
import { UsageError } from "../../services/process/usage-error.js";

/** Where the agent reads its local (class-2) Gateway API objects from. */
export type LocalSourceSpec =
  | {
      /** A directory of manifests, followed for changes. */
      readonly kind: "dir";
      /** The directory. */
      readonly path: string;
    }
  | {
      /** The Kubernetes API of the agent's own cluster (in-cluster or kubeconfig credentials). */
      readonly kind: "kubernetes";
    };

/** How the agent follows its registrar. */
export type AgentMode = "watch" | "poll";

/** The agent's validated configuration. */
export interface AgentConfig {
  /** The base URL of the registrar, for example `http://127.0.0.1:8080`. */
  readonly registrar: string;
  /** This agent's cluster; local routes are recorded with it as their origin. */
  readonly cluster: string;
  /** The control cluster; undefined means federated (every origin is trusted). */
  readonly controlCluster: string | undefined;
  /** The services given with `--deps`, sorted and without duplicates. */
  readonly dependencies: readonly string[];
  /** The dependency file given with `--deps-file`, followed for changes. */
  readonly dependenciesFile: string | undefined;
  /** The directory of the last-known cache; undefined keeps no cache. */
  readonly cacheDir: string | undefined;
  /** The local route source; undefined means no local routes. */
  readonly localSource: LocalSourceSpec | undefined;
  /** The kubeconfig of `--local-source kubernetes`; undefined: in-cluster or the default. */
  readonly kubeconfig: string | undefined;
  /** The file the route table is written to; undefined writes none. */
  readonly outFile: string | undefined;
  /** The address of `/healthz`, `/readyz`, `/metrics` (and `/routes` without `routesListen`). */
  readonly listen: { readonly host: string; readonly port: number };
  /** `--routes-listen`: where `/routes` alone is served (a Unix socket or HOST:PORT). */
  readonly routesListen:
    | { readonly path: string }
    | { readonly host: string; readonly port: number }
    | undefined;
  /** Push (`watch`, with polling only while the stream is down) or polling only. */
  readonly mode: AgentMode;
  /** The polling period, in milliseconds. */
  readonly pollIntervalMs: number;
  /** How long a stream may stay silent before it counts as dead, in milliseconds. */
  readonly keepaliveTimeoutMs: number;
  /** The first reconnect delay (before jitter), in milliseconds. */
  readonly backoffInitialMs: number;
  /** The cap on the reconnect delay (before jitter), in milliseconds. */
  readonly backoffMaxMs: number;
  /** How far ahead of this node's clock an imported version may be, in milliseconds. */
  readonly maxVersionSkewMs: number;
  /**
   * `--mass-delete-threshold` and `--mass-delete-min`: when imported
   * projections missing from a complete state are held instead of dropped.
   */
  readonly massDelete: MassDeleteThreshold;
  /** `--mass-delete-hold`: how long such a hold lasts, in milliseconds. */
  readonly massDeleteHoldMs: number;
  /** The log level. */
  readonly logLevel: string;
  /** TLS to an https:// registrar; undefined for http://. */
  readonly tls: ClientTlsConfig | undefined;
  /** `--origin-keys`: the origins' public keys file, re-read when it changes; undefined: none. */
  readonly originKeysFile: string | undefined;
  /** `--require-signatures`: refuse unsigned projections and unknown keys (needs `originKeysFile`). */
  readonly requireSignatures: boolean;
  /** `--agent-id`: the agent's name in its registrar's table of reporting agents. */
  readonly agentId: string;
}

/** The `--help` text. */
export const AGENT_USAGE = `Usage: aether-agent --registrar URL --cluster NAME --deps ns/svc[,ns/svc] [flags]

Follows the routing config of the services this node's workloads call (its
dependency set) from a registrar's ConfigService, checks trust and conflicts
itself, keeps a last-known cache on disk, lets local routes win over
imported ones, and publishes the merged route table as a file, at GET /routes,
and to library listeners. Also serves /healthz, /readyz and /metrics.

Flags:
  --registrar URL           the registrar's ConfigService (required), for example http://127.0.0.1:8080
  --cluster NAME            this agent's cluster, recorded as the origin of local routes (required)
  --control-cluster NAME    trust only this origin (default: federated, trust every origin)
  --deps NS/SVC[,NS/SVC]    services this node calls (repeatable)
  --deps-file PATH          a file of services (one per line or comma-separated, # comments),
                            re-read when it changes; a bad entry is reported and ignored
  --cache-dir DIR           keep the last-known route state in DIR and serve it at start
  --local-source SOURCE     local class-2 routes: dir:PATH or kubernetes
  --kubeconfig PATH         kubeconfig of --local-source kubernetes (default: in-cluster
                            config, else $KUBECONFIG or ~/.kube/config)
  --out FILE                write the route table to FILE as JSON (replaced atomically on change)
  --listen HOST:PORT        address of /healthz, /readyz, /metrics, and of /routes unless
                            --routes-listen is given (default 127.0.0.1:8081)
  --routes-listen unix:PATH|HOST:PORT
                            serve /routes only here: a Unix socket (mode 0660) or a
                            host-local address the node's data plane reaches, and not on
                            --listen (the manifests use a socket on a hostPath)
  --mode watch|poll         stream with polling as fallback, or poll only (default watch)
  --poll-interval DURATION  polling period (default 10s)
  --keepalive-timeout DURATION  a stream silent this long is dead (default 45s)
  --backoff-initial DURATION    first reconnect delay (default 200ms)
  --backoff-max DURATION    longest reconnect delay (default 5s)
  --max-version-skew DURATION   reject projections whose version is further ahead of this
                            node's clock (version_out_of_range; default 5m)
  --mass-delete-threshold PERCENT|off
                            keep (hold) imported projections a complete state from the
                            registrar lacks when more than PERCENT of one origin's, or of
                            all, vanish at once, or all of them (default 50%); /readyz says
                            degraded meanwhile
  --mass-delete-min N       ... and at least N of them (default 3)
  --mass-delete-hold DURATION   drop held projections the registrar still lacks after this
                            (default 10m)
  --origin-keys PATH        the origins' public keys (YAML or JSON: origins: {NAME: [PEM SPKI,
                            ...]}); signed projections are verified end to end with them. Re-read
                            when the file changes (a bad re-read keeps the keys in force); a key
                            added makes the agent take a fresh snapshot
  --require-signatures      refuse (and keep the last good projection instead of) a projection
                            that is unsigned (unsigned), signed with a key --origin-keys does not
                            list (unknown_key) or whose signature does not hold (bad_signature);
                            needs --origin-keys. Without it, signatures present are verified and
                            unsigned projections pass
  --agent-id NAME           this agent's name when it reports what it applied and refused
                            (ReportAppliedConfig) to the registrar: 1 to 253 characters of
                            [A-Za-z0-9._-] (default $NODE_NAME, else the host name). Reports
                            go over the same connection, when what it applied changes and at
                            least every interval the registrar names (default 30s)
  --log-level LEVEL         trace, debug, info, warn, error (default info)
${CLIENT_TLS_USAGE}
                            (the files are re-read as they rotate; new connections use them)
  -h, --help                print this help

At least one of --deps and --deps-file is needed; an empty dependency set
watches nothing.
`;

/** The flags `parseArgs` accepts, with their defaults. */
const FLAG_OPTIONS: NonNullable<ParseArgsConfig["options"]> = {
  registrar: { type: "string" },
  cluster: { type: "string" },
  "control-cluster": { type: "string", default: "" },
  deps: { type: "string", multiple: true, default: [] },
  "deps-file": { type: "string" },
  "cache-dir": { type: "string" },
  "local-source": { type: "string" },
  kubeconfig: { type: "string" },
  out: { type: "string" },
  listen: { type: "string", default: "127.0.0.1:8081" },
  "routes-listen": { type: "string" },
  mode: { type: "string", default: "watch" },
  "poll-interval": { type: "string", default: "10s" },
  "keepalive-timeout": { type: "string", default: "45s" },
  "backoff-initial": { type: "string", default: "200ms" },
  "backoff-max": { type: "string", default: "5s" },
  "max-version-skew": { type: "string", default: "5m" },
  "mass-delete-threshold": { type: "string", default: "50%" },
  "mass-delete-min": { type: "string", default: "3" },
  "mass-delete-hold": { type: "string", default: "10m" },
  "log-level": { type: "string", default: "info" },
  "origin-keys": { type: "string" },
  "require-signatures": { type: "boolean", default: false },
  "agent-id": { type: "string" },
  help: { type: "boolean", short: "h" },
  ...CLIENT_TLS_OPTIONS,
};

/** Parses `--routes-listen`: `unix:PATH` (an absolute or relative path) or `HOST:PORT`. */
function parseRoutesListen(
  value: string | undefined,
): { readonly path: string } | { readonly host: string; readonly port: number } | undefined {
  if (value === undefined) return undefined;
  if (value.startsWith("unix:")) {
    const path = value.slice("unix:".length);
    if (path === "") throw new UsageError("--routes-listen unix: needs a socket path");
    // Linux limits a socket path to 107 bytes.
    if (Buffer.byteLength(path) > 107) {
      throw new UsageError(`--routes-listen: the socket path ${path} is longer than 107 bytes`);
    }
    return { path };
  }
  try {
    return parseListenFlag(value, "127.0.0.1:8082");
  } catch {
    throw new UsageError(
      `--routes-listen ${JSON.stringify(value)} is not unix:PATH or HOST:PORT (for example unix:/run/aether/agent/routes.sock)`,
    );
  }
}

/** Parses `dir:PATH` or `kubernetes`. */
function parseLocalSource(value: string | undefined): LocalSourceSpec | undefined {
  if (value === undefined) return undefined;
  if (value === "kubernetes") return { kind: "kubernetes" };
  if (value.startsWith("dir:") && value.length > 4) return { kind: "dir", path: value.slice(4) };
  throw new UsageError(`--local-source ${JSON.stringify(value)} must be dir:PATH or kubernetes`);
}

/** Checks a cluster-name flag; empty is allowed when `optional`. */
function clusterFlag(flag: string, value: string | undefined, optional: boolean): string {
  if (value === undefined || value === "") {
    if (optional) return "";
    throw new UsageError(`--${flag} is required`);
  }
  const problem = checkClusterName(value);
  if (problem !== undefined) throw new UsageError(`--${flag}: ${problem}`);
  return value;
}

/** Validates the `--deps` values: every entry must be `namespace/name`. */
function parseDependencyFlags(values: readonly string[]): string[] {
  const services = new Set<string>();
  for (const value of values) {
    for (const entry of value.split(",")) {
      const service = entry.trim();
      if (service === "") continue;
      const problem = checkServiceName(service);
      if (problem !== undefined) throw new UsageError(`--deps: ${problem}`);
      services.add(service);
    }
  }
  return [...services].sort();
}

/**
 * Parses `--agent-id`, or takes the default from `sources` (the node name,
 * else the host name); either must be a valid agent name.
 */
function parseAgentId(value: string | undefined, sources: AgentIdSources): string {
  const agentId = value ?? defaultAgentId(sources);
  const problem = checkAgentId(agentId);
  if (problem === undefined) return agentId;
  if (value !== undefined) throw new UsageError(`--agent-id: ${problem}`);
  throw new UsageError(
    `the default agent id (from NODE_NAME or the host name): ${problem}; give --agent-id NAME`,
  );
}

/**
 * Parses the agent's arguments (without `node` and the script). Returns
 * `"help"` when help was asked for; throws {@link UsageError} for anything
 * missing or malformed. `sources` give the default `--agent-id` (by default
 * the environment's `NODE_NAME` and the host name).
 */
export function parseAgentFlags(
  argv: readonly string[],
  sources: AgentIdSources = { nodeName: process.env.NODE_NAME, hostname: hostname() },
): AgentConfig | "help" {
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({ args: [...argv], strict: true, options: FLAG_OPTIONS }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help === true) return "help";
  const registrar = values.registrar as string | undefined;
  if (registrar === undefined) throw new UsageError("--registrar is required (its base URL)");
  if (!URL.canParse(registrar) || !/^https?:$/.test(new URL(registrar).protocol)) {
    throw new UsageError(
      `--registrar ${JSON.stringify(registrar)} is not an http(s) URL (for example http://127.0.0.1:8080)`,
    );
  }
  const cluster = clusterFlag("cluster", values.cluster as string | undefined, false);
  const controlCluster = clusterFlag("control-cluster", values["control-cluster"] as string, true);
  const dependencies = parseDependencyFlags(values.deps as string[]);
  const dependenciesFile = values["deps-file"] as string | undefined;
  if (dependenciesFile === "") throw new UsageError("--deps-file needs a path");
  if (dependencies.length === 0 && dependenciesFile === undefined) {
    throw new UsageError("give the dependency set with --deps NS/SVC[,NS/SVC] and/or --deps-file");
  }
  const mode = values.mode as string;
  if (mode !== "watch" && mode !== "poll") {
    throw new UsageError(`--mode ${JSON.stringify(mode)} must be watch or poll`);
  }
  const logLevel = parseLogLevelFlag(values["log-level"] as string);
  const backoffInitialMs = parseDurationFlag(
    "backoff-initial",
    values["backoff-initial"] as string,
    1,
  );
  const backoffMaxMs = parseDurationFlag("backoff-max", values["backoff-max"] as string, 1);
  if (backoffMaxMs < backoffInitialMs) {
    throw new UsageError("--backoff-max must be at least --backoff-initial");
  }
  const localSource = parseLocalSource(values["local-source"] as string | undefined);
  const kubeconfig = values.kubeconfig as string | undefined;
  if (kubeconfig !== undefined && localSource?.kind !== "kubernetes") {
    throw new UsageError("--kubeconfig is only used with --local-source kubernetes");
  }
  const emptyToUndefined = (value: unknown) =>
    value === undefined || value === "" ? undefined : (value as string);
  const signatures = parseSignatureFlags(values);
  const agentId = parseAgentId(values["agent-id"] as string | undefined, sources);
  return {
    agentId,
    registrar: registrar.replace(/\/+$/, ""),
    cluster,
    controlCluster: controlCluster === "" ? undefined : controlCluster,
    dependencies,
    dependenciesFile,
    cacheDir: emptyToUndefined(values["cache-dir"]),
    localSource,
    kubeconfig,
    outFile: emptyToUndefined(values.out),
    listen: parseListenFlag(values.listen as string, "127.0.0.1:8081"),
    routesListen: parseRoutesListen(values["routes-listen"] as string | undefined),
    mode,
    pollIntervalMs: parseDurationFlag("poll-interval", values["poll-interval"] as string, 10),
    keepaliveTimeoutMs: parseDurationFlag(
      "keepalive-timeout",
      values["keepalive-timeout"] as string,
      100,
    ),
    backoffInitialMs,
    backoffMaxMs,
    maxVersionSkewMs: parseDurationFlag(
      "max-version-skew",
      values["max-version-skew"] as string,
      1_000,
    ),
    massDelete: parseMassDeleteFlags(
      values["mass-delete-threshold"] as string,
      values["mass-delete-min"] as string,
    ),
    massDeleteHoldMs: parseDurationFlag(
      "mass-delete-hold",
      values["mass-delete-hold"] as string,
      1,
    ),
    logLevel,
    tls: parseClientTlsFlags(registrar, values as ClientTlsFlagValues),
    ...signatures,
  };
}

/** Parses `--origin-keys` and `--require-signatures` (which needs keys to verify with). */
function parseSignatureFlags(
  values: Record<string, unknown>,
): Pick<AgentConfig, "originKeysFile" | "requireSignatures"> {
  const originKeysFile = values["origin-keys"] as string | undefined;
  if (originKeysFile === "") throw new UsageError("--origin-keys needs a path");
  const requireSignatures = values["require-signatures"] === true;
  if (requireSignatures && originKeysFile === undefined) {
    throw new UsageError(
      "--require-signatures needs --origin-keys PATH (the origins' public keys to verify with)",
    );
  }
  return { originKeysFile, requireSignatures };
}
