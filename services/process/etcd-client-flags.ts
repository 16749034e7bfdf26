/**
 * The flags of an etcd client, shared by the registrar (`--store etcd`) and
 * `aetherctl etcd-rbac --apply`: `--etcd-endpoints` and the TLS and
 * authentication files (`--etcd-ca-file`, `--etcd-cert-file`,
 * `--etcd-key-file`, `--etcd-username`, `--etcd-password-file`), checked
 * against each other and the endpoints' scheme, the files read once so a
 * bad one is a usage error at once.
 */
import { type EtcdSecurityFiles, readEtcdSecurity } from "../runtime/etcd-security.js";
import { UsageError } from "./usage-error.js";

/** The etcd TLS and authentication flags, TLS first. */
export const ETCD_SECURITY_FLAGS = [
  "etcd-ca-file",
  "etcd-cert-file",
  "etcd-key-file",
  "etcd-username",
  "etcd-password-file",
] as const;

/** The `parseArgs` options of the etcd client flags. */
export const ETCD_CLIENT_OPTIONS = {
  "etcd-endpoints": { type: "string" },
  "etcd-ca-file": { type: "string" },
  "etcd-cert-file": { type: "string" },
  "etcd-key-file": { type: "string" },
  "etcd-username": { type: "string" },
  "etcd-password-file": { type: "string" },
} as const;

/** The help lines of the etcd client flags. */
export const ETCD_CLIENT_USAGE = `  --etcd-endpoints URL[,URL] etcd client URLs
  --etcd-ca-file PATH       PEM CA bundle that verifies etcd's server certificate (TLS:
                            https:// endpoints only)
  --etcd-cert-file PATH     PEM client certificate for etcd's --client-cert-auth (TLS:
                            https:// endpoints only; with --etcd-key-file)
  --etcd-key-file PATH      PEM private key of --etcd-cert-file
  --etcd-username NAME      etcd user for etcd authentication (with --etcd-password-file)
  --etcd-password-file PATH file holding that user's password (trailing newline trimmed)`;

/** The values of the etcd TLS and authentication flags, each undefined when not given. */
export interface EtcdSecurityFlagValues extends EtcdSecurityFiles {
  readonly etcdCaFile: string | undefined;
  readonly etcdCertFile: string | undefined;
  readonly etcdKeyFile: string | undefined;
  readonly etcdUsername: string | undefined;
  readonly etcdPasswordFile: string | undefined;
}

/**
 * Splits `--etcd-endpoints URL[,URL]` (blanks dropped) and checks each is a
 * URL; throws a {@link UsageError} naming the one that is not. An absent
 * flag gives no endpoints.
 */
export function parseEtcdEndpoints(value: string | undefined): string[] {
  const endpoints = (value ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  for (const endpoint of endpoints) {
    if (!URL.canParse(endpoint)) {
      throw new UsageError(
        `--etcd-endpoints: ${JSON.stringify(endpoint)} is not a URL (for example http://127.0.0.1:2379)`,
      );
    }
  }
  return endpoints;
}

/**
 * Checks the etcd TLS and authentication flags in `values` against the
 * endpoints (all https:// or none; a TLS file needs https://) and reads
 * their files once (a missing, unreadable, empty or malformed file, a
 * certificate without its key or a user without a password file is a
 * {@link UsageError}). Returns the flags' values.
 */
export function parseEtcdSecurityFlags(
  values: Readonly<Record<string, unknown>>,
  endpoints: readonly string[],
): EtcdSecurityFlagValues {
  const flags = {
    etcdCaFile: values["etcd-ca-file"] as string | undefined,
    etcdCertFile: values["etcd-cert-file"] as string | undefined,
    etcdKeyFile: values["etcd-key-file"] as string | undefined,
    etcdUsername: values["etcd-username"] as string | undefined,
    etcdPasswordFile: values["etcd-password-file"] as string | undefined,
  };
  const secure = endpoints.filter((endpoint) => new URL(endpoint).protocol === "https:");
  if (secure.length > 0 && secure.length < endpoints.length) {
    throw new UsageError(
      "--etcd-endpoints: mixes https:// and other endpoints; use https:// for all of them or none",
    );
  }
  const tlsFlag = ETCD_SECURITY_FLAGS.slice(0, 3).find((flag) => values[flag] !== undefined);
  if (tlsFlag !== undefined && secure.length === 0 && endpoints.length > 0) {
    throw new UsageError(
      `--${tlsFlag} means TLS towards etcd: --etcd-endpoints must be https:// URLs (got ${endpoints.join(",")})`,
    );
  }
  try {
    readEtcdSecurity(flags);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  return flags;
}
