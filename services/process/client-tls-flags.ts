/**
 * The TLS flags of a registrar client (the agent and aetherctl):
 * `--tls-cert-file`, `--tls-key-file`, `--trust-domain-bundle TD=PATH`
 * (repeatable) and `--registrar-spiffe-id ID`, checked against
 * `--registrar`'s scheme. Pure: the files are read later
 * (services/runtime/tls/). Every problem is a {@link UsageError} naming the
 * flag.
 */
import { parseSpiffeIdFlag, parseTrustDomainBundleFlags } from "./tls-flags.js";
import { UsageError } from "./usage-error.js";

/** A client's TLS configuration, as the flags give it. */
export interface ClientTlsConfig {
  /** The client certificate chain (PEM); with `keyFile`, or neither (no client certificate). */
  readonly certFile?: string;
  /** The client certificate's key (PEM). */
  readonly keyFile?: string;
  /** Trust domain → bundle file; empty: the system's CAs and the host name are checked. */
  readonly bundleFiles: ReadonlyMap<string, string>;
  /** The registrar's SPIFFE ID, checked instead of its host name. */
  readonly registrarSpiffeId?: string;
}

/** The raw values of the client TLS flags. */
export interface ClientTlsFlagValues {
  readonly "tls-cert-file"?: string | undefined;
  readonly "tls-key-file"?: string | undefined;
  readonly "trust-domain-bundle"?: readonly string[] | undefined;
  readonly "registrar-spiffe-id"?: string | undefined;
}

/** The `parseArgs` options of the client TLS flags. */
export const CLIENT_TLS_OPTIONS = {
  "tls-cert-file": { type: "string" },
  "tls-key-file": { type: "string" },
  "trust-domain-bundle": { type: "string", multiple: true },
  "registrar-spiffe-id": { type: "string" },
} as const;

/** The `--help` lines of the client TLS flags. */
export const CLIENT_TLS_USAGE = `  --tls-cert-file PATH      this client's certificate (X.509-SVID) for an https:// registrar
  --tls-key-file PATH       its private key
  --trust-domain-bundle TD=PATH
                            the CA bundle (PEM or SPIFFE JWKS) of trust domain TD (repeatable);
                            without it the system's CAs are used
  --registrar-spiffe-id ID  the registrar's SPIFFE ID, checked instead of its host name`;

/**
 * Parses the client TLS flags for `registrar` (its URL). Returns undefined
 * for a plain http:// registrar without TLS flags; TLS flags with http://,
 * a certificate without its key (or the reverse), or `--registrar-spiffe-id`
 * whose trust domain has no `--trust-domain-bundle` are usage errors.
 */
export function parseClientTlsFlags(
  registrar: string,
  values: ClientTlsFlagValues,
): ClientTlsConfig | undefined {
  const certFile = values["tls-cert-file"] || undefined;
  const keyFile = values["tls-key-file"] || undefined;
  const bundleValues = values["trust-domain-bundle"] ?? [];
  const idValue = values["registrar-spiffe-id"];
  const https = new URL(registrar).protocol === "https:";
  const given = [
    certFile === undefined ? [] : ["--tls-cert-file"],
    keyFile === undefined ? [] : ["--tls-key-file"],
    bundleValues.length === 0 ? [] : ["--trust-domain-bundle"],
    idValue === undefined ? [] : ["--registrar-spiffe-id"],
  ].flat();
  if (!https) {
    if (given.length === 0) return undefined;
    throw new UsageError(
      `${given.join(", ")} need an https:// registrar (got ${JSON.stringify(registrar)})`,
    );
  }
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new UsageError("--tls-cert-file and --tls-key-file go together: give both or neither");
  }
  const bundleFiles = parseTrustDomainBundleFlags(bundleValues);
  const config: ClientTlsConfig = {
    ...(certFile === undefined ? {} : { certFile }),
    ...(keyFile === undefined ? {} : { keyFile }),
    bundleFiles,
  };
  if (idValue === undefined) return config;
  const id = parseSpiffeIdFlag("registrar-spiffe-id", idValue);
  if (!bundleFiles.has(id.trustDomain)) {
    throw new UsageError(
      `--registrar-spiffe-id ${idValue}: no --trust-domain-bundle for its trust domain ${id.trustDomain}`,
    );
  }
  return { ...config, registrarSpiffeId: idValue };
}
