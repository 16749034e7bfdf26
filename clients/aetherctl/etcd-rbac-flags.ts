/**
 * The command line of `aetherctl etcd-rbac`, which talks to etcd (with
 * `--apply`) rather than to a registrar, so it has flags of its own:
 * `--prefix`, `--cluster` (repeatable), `--apply` with the etcd client flags
 * (`services/process/etcd-client-flags.ts`) and `--timeout`. Every problem
 * is a {@link UsageError}.
 */
import { parseArgs } from "node:util";
import { parseDuration } from "../../services/common/duration.js";
import { checkClusterName } from "../../services/common/service-name.js";
import { DEFAULT_STORE_PREFIX, normalizePrefix } from "../../services/common/store-layout.js";
import {
  ETCD_CLIENT_OPTIONS,
  ETCD_CLIENT_USAGE,
  ETCD_SECURITY_FLAGS,
  type EtcdSecurityFlagValues,
  parseEtcdEndpoints,
  parseEtcdSecurityFlags,
} from "../../services/process/etcd-client-flags.js";
import { UsageError } from "../../services/process/usage-error.js";

/** The command's name, as typed. */
export const ETCD_RBAC_COMMAND = "etcd-rbac";

/** `aetherctl etcd-rbac --help`. */
export const ETCD_RBAC_USAGE = `Usage: aetherctl etcd-rbac [--prefix PREFIX] --cluster NAME [--cluster NAME…]
       aetherctl etcd-rbac [--prefix PREFIX] --cluster NAME… --apply --etcd-endpoints URL [etcd flags]

Prints the etcd roles and users that give each cluster's registrar exactly
what it needs, as etcdctl commands (ETCDCTL_API=3) to paste, one cluster after
another: role and user aether-NAME, read on PREFIX/ and read-write on
PREFIX/clusters/NAME/ (its projections and its export election), nothing else.
The users have no password: with etcd's --client-cert-auth the registrar's
client certificate, with CN aether-NAME, signs it in. With --apply they are
created in a running etcd instead (an existing role keeps its name and loses
any permission not listed here). Enabling auth (etcdctl auth enable) stays a
separate step; see deploy/README.md, "etcd roles per origin".

Flags:
  --prefix PREFIX           the registrars' --etcd-prefix (default ${DEFAULT_STORE_PREFIX})
  --cluster NAME            a cluster (repeatable; at least one)
  --apply                   create them in the etcd of --etcd-endpoints (with root's
                            credentials once auth is on)
${ETCD_CLIENT_USAGE}
  --timeout DURATION        deadline of each etcd call with --apply (default 10s)
  -h, --help                print help

Exit codes: 0 ok, 1 etcd refused or could not be reached, 2 bad usage.
`;

/** What `--apply` needs: where etcd is, its TLS and credential files, each call's deadline. */
export interface EtcdRbacApply {
  /** The etcd client URLs. */
  readonly endpoints: readonly string[];
  /** The TLS and credential files (already checked readable and well-formed). */
  readonly securityFiles: EtcdSecurityFlagValues;
  /** The deadline of each etcd call, in milliseconds. */
  readonly timeoutMs: number;
}

/** A parsed `aetherctl etcd-rbac` command line. */
export type EtcdRbacCommandLine =
  | { readonly kind: "help" }
  | {
      readonly kind: "run";
      /** The normalized store prefix. */
      readonly prefix: string;
      /** The clusters, in the order given, each once. */
      readonly clusters: readonly string[];
      /** Create them in etcd instead of printing; undefined prints. */
      readonly apply: EtcdRbacApply | undefined;
    };

const OPTIONS = {
  prefix: { type: "string", default: DEFAULT_STORE_PREFIX },
  cluster: { type: "string", multiple: true },
  apply: { type: "boolean" },
  timeout: { type: "string", default: "10s" },
  help: { type: "boolean", short: "h" },
  ...ETCD_CLIENT_OPTIONS,
} as const;

const VALUE_FLAGS = new Set(
  Object.entries(OPTIONS)
    .filter(([, option]) => option.type === "string")
    .map(([name]) => `--${name}`),
);

/**
 * Reports whether a command line is `etcd-rbac`'s (its first word, or
 * `help etcd-rbac`), skipping the values of its own flags and of
 * `globalValueFlags` (aetherctl's global flags that take a value).
 */
export function isEtcdRbacCommandLine(
  argv: readonly string[],
  globalValueFlags: ReadonlySet<string>,
): boolean {
  const words: string[] = [];
  for (let i = 0; i < argv.length && words.length < 2; i++) {
    const arg = argv[i] as string;
    if (VALUE_FLAGS.has(arg) || globalValueFlags.has(arg)) i++;
    else if (!arg.startsWith("-")) words.push(arg);
  }
  return words[0] === ETCD_RBAC_COMMAND || (words[0] === "help" && words[1] === ETCD_RBAC_COMMAND);
}

/** Parses an `aetherctl etcd-rbac` command line (the command word included). */
export function parseEtcdRbacFlags(argv: readonly string[]): EtcdRbacCommandLine {
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], strict: true, allowPositionals: true, options: OPTIONS });
  } catch (error) {
    throw new UsageError(
      (error as Error).message.replace(/\. To specify a positional.*$/s, ""),
      ETCD_RBAC_COMMAND,
    );
  }
  const { values } = parsed;
  const extra = parsed.positionals.filter((word) => word !== ETCD_RBAC_COMMAND && word !== "help");
  if (values.help === true || parsed.positionals[0] === "help") return { kind: "help" };
  if (extra.length > 0) {
    throw new UsageError(
      `etcd-rbac takes no arguments (got ${extra.join(" ")})`,
      ETCD_RBAC_COMMAND,
    );
  }
  let prefix: string;
  try {
    prefix = normalizePrefix(values.prefix as string);
  } catch (error) {
    throw new UsageError(`--prefix: ${(error as Error).message}`, ETCD_RBAC_COMMAND);
  }
  const clusters = (values.cluster as string[] | undefined) ?? [];
  if (clusters.length === 0) {
    throw new UsageError("etcd-rbac needs at least one --cluster NAME", ETCD_RBAC_COMMAND);
  }
  for (const [index, cluster] of clusters.entries()) {
    const problem = checkClusterName(cluster);
    if (problem !== undefined) throw new UsageError(`--cluster: ${problem}`, ETCD_RBAC_COMMAND);
    if (clusters.indexOf(cluster) !== index) {
      throw new UsageError(`--cluster ${cluster} is given twice`, ETCD_RBAC_COMMAND);
    }
  }
  return { kind: "run", prefix, clusters, apply: parseApply(values) };
}

/** The `--apply` part: undefined without it; its etcd flags are refused without it. */
function parseApply(values: Record<string, unknown>): EtcdRbacApply | undefined {
  if (values.apply !== true) {
    const etcdFlag = ["etcd-endpoints", ...ETCD_SECURITY_FLAGS].find(
      (flag) => values[flag] !== undefined,
    );
    if (etcdFlag !== undefined) {
      throw new UsageError(
        `--${etcdFlag} is only used with --apply (without it the commands are printed)`,
        ETCD_RBAC_COMMAND,
      );
    }
    return undefined;
  }
  const endpoints = wrap(() => parseEtcdEndpoints(values["etcd-endpoints"] as string | undefined));
  if (endpoints.length === 0) {
    throw new UsageError("--apply needs --etcd-endpoints URL[,URL]", ETCD_RBAC_COMMAND);
  }
  const securityFiles = wrap(() => parseEtcdSecurityFlags(values, endpoints));
  let timeoutMs: number;
  try {
    timeoutMs = parseDuration(values.timeout as string);
  } catch (error) {
    throw new UsageError(`--timeout: ${(error as Error).message}`, ETCD_RBAC_COMMAND);
  }
  if (timeoutMs <= 0) throw new UsageError("--timeout must be more than 0", ETCD_RBAC_COMMAND);
  return { endpoints, securityFiles, timeoutMs };
}

/** Runs `parse`, giving a {@link UsageError} it throws this command's usage. */
function wrap<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof UsageError) throw new UsageError(error.message, ETCD_RBAC_COMMAND);
    throw error;
  }
}
