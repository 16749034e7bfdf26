/**
 * aetherctl's environment defaults of the client TLS flags, read here and
 * nowhere else, so that `kubectl exec … -- aetherctl status` in a pod whose
 * manifest sets them needs no flags:
 *
 * - `$AETHER_TLS_CERT_FILE` and `$AETHER_TLS_KEY_FILE`: `--tls-cert-file`
 *   and `--tls-key-file`, as a pair (either flag given: both come from the
 *   command line);
 * - `$AETHER_TRUST_DOMAIN_BUNDLE`: every `--trust-domain-bundle`, as a
 *   comma-separated list of `TD=PATH` (any flag given: only the flags);
 * - `$AETHER_REGISTRAR_SPIFFE_ID`: `--registrar-spiffe-id`.
 *
 * An empty variable is unset. The defaults serve an https:// registrar only:
 * with http:// they are left out (an explicit `--registrar http://…` in a
 * pod that sets them is no usage error). Pure; usage errors about a value
 * taken from a variable name the variable.
 */
import {
  CLIENT_TLS_FLAG_LABELS,
  type ClientTlsFlag,
  type ClientTlsFlagValues,
  type ClientTlsLabels,
} from "../../services/process/client-tls-flags.js";

/** The variable that supplies each flag's default. */
export const CLIENT_TLS_ENV: Readonly<Record<ClientTlsFlag, string>> = {
  "tls-cert-file": "AETHER_TLS_CERT_FILE",
  "tls-key-file": "AETHER_TLS_KEY_FILE",
  "trust-domain-bundle": "AETHER_TRUST_DOMAIN_BUNDLE",
  "registrar-spiffe-id": "AETHER_REGISTRAR_SPIFFE_ID",
};

/** The `--help` lines of the variables. */
export const CLIENT_TLS_ENV_USAGE = `Environment (defaults of the flags; a flag on the command line wins):
  AETHER_REGISTRAR            --registrar
  AETHER_TLS_CERT_FILE        --tls-cert-file  (a pair with AETHER_TLS_KEY_FILE: either
  AETHER_TLS_KEY_FILE         --tls-key-file    flag given, both come from the flags)
  AETHER_TRUST_DOMAIN_BUNDLE  every --trust-domain-bundle, comma-separated: TD=PATH,TD=PATH
  AETHER_REGISTRAR_SPIFFE_ID  --registrar-spiffe-id
  The TLS ones apply to an https:// registrar only.`;

/** The flag values with the environment's defaults filled in, and how a usage error names each. */
export interface ClientTlsWithEnv {
  readonly values: ClientTlsFlagValues;
  readonly labels: ClientTlsLabels;
}

function isHttps(url: string): boolean {
  try {
    return new URL(url).protocol === "https:";
  } catch {
    return false;
  }
}

/**
 * Fills the client TLS flags not given in `values` from `env` (see the
 * module comment) for `registrar` (its URL). Never throws: the values are
 * checked by `parseClientTlsFlags` with the labels returned.
 */
export function withClientTlsEnv(
  registrar: string,
  values: ClientTlsFlagValues,
  env: NodeJS.ProcessEnv,
): ClientTlsWithEnv {
  const labels: Record<ClientTlsFlag, string> = { ...CLIENT_TLS_FLAG_LABELS };
  if (!isHttps(registrar)) return { values, labels };
  const filled: { -readonly [F in ClientTlsFlag]?: ClientTlsFlagValues[F] } = { ...values };
  const fromEnv = (...flags: ClientTlsFlag[]): (string | undefined)[] => {
    const found = flags.map((flag) => env[CLIENT_TLS_ENV[flag]] || undefined);
    // One set: every flag of it is named by its variable (the pair is one).
    if (found.some((value) => value !== undefined)) {
      for (const flag of flags) labels[flag] = `$${CLIENT_TLS_ENV[flag]}`;
    }
    return found;
  };
  if (values["tls-cert-file"] === undefined && values["tls-key-file"] === undefined) {
    [filled["tls-cert-file"], filled["tls-key-file"]] = fromEnv("tls-cert-file", "tls-key-file");
  }
  if ((values["trust-domain-bundle"] ?? []).length === 0) {
    const [list] = fromEnv("trust-domain-bundle");
    if (list !== undefined) {
      filled["trust-domain-bundle"] = list
        .split(",")
        .map((item) => item.trim())
        .filter((item) => item !== "");
    }
  }
  if (values["registrar-spiffe-id"] === undefined) {
    [filled["registrar-spiffe-id"]] = fromEnv("registrar-spiffe-id");
  }
  return { values: filled, labels };
}
