/**
 * The TLS flags of a registrar client (the agent and aetherctl):
 * `--tls-cert-file`, `--tls-key-file`, `--trust-domain-bundle TD=PATH`
 * (repeatable) and `--registrar-spiffe-id ID`, checked against
 * `--registrar`'s scheme. Pure: the files are read later
 * (services/runtime/tls/). Every problem is a {@link UsageError} naming the
 * flag, or the environment variable a value came from (aetherctl's
 * defaults: clients/aetherctl/tls-env.ts).
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

/** The flags of {@link ClientTlsFlagValues}. */
export type ClientTlsFlag = keyof ClientTlsFlagValues;

/** How a usage error names each value: its flag (`--tls-cert-file`), or the variable it came from (`$AETHER_TLS_CERT_FILE`). */
export type ClientTlsLabels = Readonly<Record<ClientTlsFlag, string>>;

/** Every value named by its flag. */
export const CLIENT_TLS_FLAG_LABELS: ClientTlsLabels = {
  "tls-cert-file": "--tls-cert-file",
  "tls-key-file": "--tls-key-file",
  "trust-domain-bundle": "--trust-domain-bundle",
  "registrar-spiffe-id": "--registrar-spiffe-id",
};

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
 * whose trust domain has no `--trust-domain-bundle` are usage errors, each
 * naming its values by `labels`.
 */
export function parseClientTlsFlags(
  registrar: string,
  values: ClientTlsFlagValues,
  labels: ClientTlsLabels = CLIENT_TLS_FLAG_LABELS,
): ClientTlsConfig | undefined {
  const certFile = values["tls-cert-file"] || undefined;
  const keyFile = values["tls-key-file"] || undefined;
  const bundleValues = values["trust-domain-bundle"] ?? [];
  const idValue = values["registrar-spiffe-id"];
  const https = new URL(registrar).protocol === "https:";
  const given = [
    certFile === undefined ? [] : [labels["tls-cert-file"]],
    keyFile === undefined ? [] : [labels["tls-key-file"]],
    bundleValues.length === 0 ? [] : [labels["trust-domain-bundle"]],
    idValue === undefined ? [] : [labels["registrar-spiffe-id"]],
  ].flat();
  if (!https) {
    if (given.length === 0) return undefined;
    throw new UsageError(
      `${given.join(", ")} need an https:// registrar (got ${JSON.stringify(registrar)})`,
    );
  }
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new UsageError(
      `${labels["tls-cert-file"]} and ${labels["tls-key-file"]} go together: give both or neither`,
    );
  }
  const bundleFiles = parseTrustDomainBundleFlags(bundleValues, labels["trust-domain-bundle"]);
  const config: ClientTlsConfig = {
    ...(certFile === undefined ? {} : { certFile }),
    ...(keyFile === undefined ? {} : { keyFile }),
    bundleFiles,
  };
  if (idValue === undefined) return config;
  const idLabel = labels["registrar-spiffe-id"];
  const id = parseSpiffeIdFlag("registrar-spiffe-id", idValue, idLabel);
  if (!bundleFiles.has(id.trustDomain)) {
    throw new UsageError(
      `${idLabel} ${idValue}: no ${labels["trust-domain-bundle"]} for its trust domain ${id.trustDomain}`,
    );
  }
  return { ...config, registrarSpiffeId: idValue };
}
