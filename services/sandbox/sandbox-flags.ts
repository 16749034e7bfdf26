/**
 * Command-line flags of the sandbox (`npm start`), parsed into a validated
 * configuration. Problems are reported as {@link UsageError},
 * naming the flag and what is expected.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { UsageError } from "../process/usage-error.js";
import { parseRegistrarFlags } from "../registrar/registrar-flags.js";
import { DEFAULT_STORE_PREFIX } from "../registrar/store/store-key.js";
import { HUB_CLUSTER, MIN_BASE_PORT } from "./sandbox-topology.js";

/** The repository root: the default `--examples` is `examples/` under it. */
const ROOT = resolve(import.meta.dirname, "../..");

/** The default `--pki-dir`, under the repository root (gitignored). */
export const DEFAULT_PKI_DIR = ".sandbox/pki";

/** Where the hub's signing key and the importers' origin keys are kept (gitignored). */
export const DEFAULT_SIGNING_DIR = ".sandbox/signing";

/** The default first port: the hub registrar's (spokes and agents follow it). */
export const DEFAULT_BASE_PORT = 8080;

/** The sandbox's validated configuration. */
export interface SandboxConfig {
  /** `memory`: one embedded store shared by every registrar; `etcd`: a real etcd. */
  readonly store: "memory" | "etcd";
  /** etcd client URLs (with `store: "etcd"`). */
  readonly etcdEndpoints: readonly string[];
  /** The store key prefix. */
  readonly etcdPrefix: string;
  /** The address every registrar and agent listens on. */
  readonly host: string;
  /** The hub's port; the others follow it (see `sandboxPorts`); 0 picks free ports for all. */
  readonly basePort: number;
  /** The examples directory (absolute): `mesh/` is exported by the hub, `local/<spoke>/` are local routes. */
  readonly examplesDir: string;
  /** Where the agents keep their caches and route-table files; undefined: a temp dir removed at exit. */
  readonly stateDir: string | undefined;
  /** The log level of the registrars and agents (JSON lines on stderr). */
  readonly logLevel: string;
  /** Mutual TLS with SPIFFE identities on every ConfigService connection (default); false: `--plaintext`. */
  readonly tls: boolean;
  /** Where the PKI of `tls` is kept and reused (absolute; default `.sandbox/pki` in the repository). */
  readonly pkiDir: string;
  /**
   * Where the hub's signing key is kept and reused (absolute; default
   * `.sandbox/signing`); undefined: `--unsigned`, nothing is signed or verified.
   */
  readonly signingDir: string | undefined;
}

/** The `--help` text. */
export const SANDBOX_USAGE = `Usage: npm start -- [flags]
       node --import tsx services/sandbox/main.ts [flags]

Runs the whole multi-cluster topology in one process: a hub registrar (the
control cluster, exporting the manifests under EXAMPLES/mesh), two spoke
registrars (east, west) and an agent per spoke (west with the local routes
under EXAMPLES/local/west), with mutual TLS and SPIFFE identities on every
ConfigService connection unless --plaintext. Prints where to look and
ready-to-paste commands, then runs until Ctrl-C or SIGTERM, which stops
everything (exit 0).

Flags:
  --store memory|etcd       memory (default): one embedded store shared by the
                            registrars, no etcd needed; etcd: a real etcd
  --etcd-endpoints URL[,URL] etcd client URLs (required with --store etcd)
  --etcd-prefix PREFIX      store key prefix (default ${DEFAULT_STORE_PREFIX})
  --listen-host HOST        address of every registrar and agent (default 127.0.0.1)
  --tls                     mutual TLS with SPIFFE identities on every ConfigService
                            connection (the default): a CA per cluster (trust domains
                            hub.mesh, east.mesh, west.mesh) and an SVID per registrar,
                            agent and the operator (aetherctl, curl), made with openssl
  --plaintext               no TLS: plain HTTP/h2c everywhere, no openssl needed
  --pki-dir DIR             where the certificates are kept and reused across runs
                            (default .sandbox/pki in the repository)
  --unsigned                do not sign: by default the hub signs every projection
                            with a key kept in .sandbox/signing (Ed25519, made at the
                            first run), and the spokes and agents verify with its
                            public key and refuse unsigned or forged projections
                            (--origin-keys, --require-signatures)
  --signing-dir DIR         where the hub's signing key is kept and reused across
                            runs, with the origin keys file (default .sandbox/signing)
  --base-port N             the hub registrar's port; east and west registrars use
                            N+1 and N+2, their agents N+1001 and N+1002, and the
                            registrars' plain-HTTP admin ports (/healthz, /readyz,
                            /metrics) N+100, N+101, N+102, the console N-1010
                            (default ${DEFAULT_BASE_PORT}; 0 picks free ports)
  --examples DIR            the manifests (default: the repository's examples/)
  --state-dir DIR           keep the agents' caches and route tables in DIR
                            (default: a temp dir, removed at exit)
  --log-level LEVEL         JSON logs of the parts on stderr: trace, debug, info,
                            warn, error (default warn)
  -h, --help                print this help
`;

/**
 * Parses the sandbox's arguments (without `node` and the script). Returns
 * `"help"` when help was asked for; throws {@link UsageError} otherwise.
 * Relative paths are resolved against the working directory.
 */
export function parseSandboxFlags(argv: readonly string[]): SandboxConfig | "help" {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        store: { type: "string", default: "memory" },
        "etcd-endpoints": { type: "string" },
        "etcd-prefix": { type: "string", default: DEFAULT_STORE_PREFIX },
        "listen-host": { type: "string", default: "127.0.0.1" },
        "base-port": { type: "string", default: String(DEFAULT_BASE_PORT) },
        examples: { type: "string" },
        "state-dir": { type: "string" },
        "log-level": { type: "string", default: "warn" },
        tls: { type: "boolean" },
        plaintext: { type: "boolean" },
        "pki-dir": { type: "string" },
        unsigned: { type: "boolean" },
        "signing-dir": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help === true) return "help";
  // The store and log flags mean to the sandbox what they mean to a registrar: check them as one.
  const endpoints = values["etcd-endpoints"] as string | undefined;
  const asRegistrar = parseRegistrarFlags([
    "--cluster",
    HUB_CLUSTER,
    "--store",
    values.store as string,
    "--etcd-prefix",
    values["etcd-prefix"] as string,
    "--log-level",
    values["log-level"] as string,
    ...(endpoints === undefined ? [] : ["--etcd-endpoints", endpoints]),
  ]);
  if (asRegistrar === "help") throw new UsageError("unexpected --help");
  const { store, etcdEndpoints, etcdPrefix, logLevel } = asRegistrar;
  if (store === "memory" && etcdEndpoints.length > 0) {
    throw new UsageError("--etcd-endpoints is only used with --store etcd");
  }
  const host = (values["listen-host"] as string).replace(/^\[|\]$/g, "");
  if (host === "" || /[\s/[\]]/.test(host)) {
    throw new UsageError(`--listen-host ${JSON.stringify(host)} is not a host name or address`);
  }
  const baseText = values["base-port"] as string;
  const basePort = /^\d{1,5}$/.test(baseText) ? Number(baseText) : -1;
  if (basePort < 0 || (basePort !== 0 && (basePort < MIN_BASE_PORT || basePort + 1002 > 65535))) {
    throw new UsageError(
      `--base-port ${JSON.stringify(baseText)} must be 0 (free ports) or a port from ${MIN_BASE_PORT} to 64533`,
    );
  }
  const examples = values.examples as string | undefined;
  const stateDir = values["state-dir"] as string | undefined;
  if (examples === "") throw new UsageError("--examples needs a directory");
  if (stateDir === "") throw new UsageError("--state-dir needs a directory");
  if (values.tls === true && values.plaintext === true) {
    throw new UsageError("--tls and --plaintext contradict each other; give one of them");
  }
  const pkiDir = values["pki-dir"] as string | undefined;
  if (pkiDir === "") throw new UsageError("--pki-dir needs a directory");
  if (pkiDir !== undefined && values.plaintext === true) {
    throw new UsageError("--pki-dir is only used with TLS (not with --plaintext)");
  }
  const signingDir = values["signing-dir"] as string | undefined;
  if (signingDir === "") throw new UsageError("--signing-dir needs a directory");
  if (signingDir !== undefined && values.unsigned === true) {
    throw new UsageError("--signing-dir is only used when signing (not with --unsigned)");
  }
  return {
    store,
    etcdEndpoints,
    etcdPrefix,
    host,
    basePort,
    examplesDir: examples === undefined ? resolve(ROOT, "examples") : resolve(examples),
    stateDir: stateDir === undefined ? undefined : resolve(stateDir),
    logLevel,
    tls: values.plaintext !== true,
    pkiDir: pkiDir === undefined ? resolve(ROOT, DEFAULT_PKI_DIR) : resolve(pkiDir),
    signingDir:
      values.unsigned === true
        ? undefined
        : signingDir === undefined
          ? resolve(ROOT, DEFAULT_SIGNING_DIR)
          : resolve(signingDir),
  };
}
