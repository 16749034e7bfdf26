/**
 * The registrar's transport-trust flags (issue 13): `--tls-cert-file` and
 * `--tls-key-file` (serve TLS on `--listen`), `--trust-domain-bundle
 * TRUST_DOMAIN=PATH` (repeatable: require client X.509-SVIDs of those trust
 * domains) and `--authorize PATTERN` (repeatable: which client SPIFFE IDs may
 * call). Their `parseArgs` options, `--help` lines and the rules between
 * them; the values themselves are parsed by `process/tls-flags.ts`. The
 * files are read when the server starts (`server/tls-port.ts`), not here.
 */
import type { AuthorizePattern } from "../common/spiffe-authorize.js";
import { parseAuthorizeFlags, parseTrustDomainBundleFlags } from "../process/tls-flags.js";
import { UsageError } from "../process/usage-error.js";

/** How the registrar serves TLS on its main port. */
export interface RegistrarTlsConfig {
  /** `--tls-cert-file`: the serving certificate chain (PEM, leaf first). */
  readonly certFile: string;
  /** `--tls-key-file`: its private key (PEM). */
  readonly keyFile: string;
  /**
   * `--trust-domain-bundle`: trust domain → bundle file. Empty: no client
   * certificates are asked for (TLS without client authentication).
   */
  readonly bundleFiles: ReadonlyMap<string, string>;
  /**
   * `--authorize`: the client SPIFFE IDs that may call; empty: every ID of a
   * configured trust domain.
   */
  readonly authorize: readonly AuthorizePattern[];
}

/** The `parseArgs` options of the TLS flags. */
export const TLS_FLAG_OPTIONS = {
  "tls-cert-file": { type: "string" },
  "tls-key-file": { type: "string" },
  "trust-domain-bundle": { type: "string", multiple: true },
  authorize: { type: "string", multiple: true },
} as const;

/** The `--help` lines of the TLS flags. */
export const TLS_FLAGS_USAGE = `Transport trust (mutual TLS with SPIFFE X.509-SVIDs; files are re-read when they
change, so rotated certificates and bundles apply to new connections without a restart):
  --tls-cert-file PATH      serve TLS on --listen with this certificate chain (PEM, leaf
                            first; with --tls-key-file). ALPN offers h2 and http/1.1; a
                            plaintext connection fails its handshake (default: plaintext)
  --tls-key-file PATH       PEM private key of --tls-cert-file
  --trust-domain-bundle TRUST_DOMAIN=PATH
                            the CA bundle of one trust domain, a PEM file or a SPIFFE bundle
                            (JWKS JSON); repeatable. Given once, clients must present an
                            X.509-SVID of a configured trust domain, chained to that trust
                            domain's own bundle (mutual TLS)
  --authorize PATTERN       a client SPIFFE ID allowed to call: exact
                            (spiffe://east.mesh/ns/aether-system/sa/aether-agent) or a
                            prefix ending in /* (spiffe://east.mesh/*); repeatable. Other
                            clients get PermissionDenied naming their ID (default: every
                            ID of a configured trust domain)
`;

/** The TLS flags' values as `parseArgs` returned them. */
interface TlsFlagValues {
  readonly "tls-cert-file"?: string;
  readonly "tls-key-file"?: string;
  readonly "trust-domain-bundle"?: readonly string[];
  readonly authorize?: readonly string[];
}

/** The trust domain an `--authorize` pattern names (`spiffe://TD/...`). */
function patternTrustDomain(pattern: AuthorizePattern): string {
  return pattern.text.slice("spiffe://".length).split("/", 1)[0] as string;
}

/**
 * Parses and checks the TLS flags: undefined without any of them (plaintext,
 * as before). Throws a {@link UsageError} for a certificate without its key
 * (or the reverse), a bundle or `--authorize` without a certificate, an
 * `--authorize` without any `--trust-domain-bundle` (no client identity to
 * authorize), and a pattern naming a trust domain that no bundle configures
 * (no client of it could ever authenticate), besides the values'
 * own errors.
 */
export function parseTlsFlags(values: Record<string, unknown>): RegistrarTlsConfig | undefined {
  const v = values as TlsFlagValues;
  const certFile = v["tls-cert-file"];
  const keyFile = v["tls-key-file"];
  const bundleFiles = parseTrustDomainBundleFlags(v["trust-domain-bundle"] ?? []);
  const authorize = parseAuthorizeFlags(v.authorize ?? []);
  if (certFile === undefined && keyFile === undefined) {
    if (bundleFiles.size > 0) {
      throw new UsageError(
        "--trust-domain-bundle needs --tls-cert-file and --tls-key-file: client certificates are verified only on a TLS port",
      );
    }
    if (authorize.length > 0) {
      throw new UsageError(
        "--authorize needs --tls-cert-file, --tls-key-file and --trust-domain-bundle: only a verified client certificate carries a SPIFFE ID",
      );
    }
    return undefined;
  }
  if (certFile === undefined) throw new UsageError("--tls-key-file needs --tls-cert-file");
  if (keyFile === undefined) throw new UsageError("--tls-cert-file needs --tls-key-file");
  if (certFile === "" || keyFile === "") {
    throw new UsageError("--tls-cert-file and --tls-key-file must name files");
  }
  if (authorize.length > 0 && bundleFiles.size === 0) {
    throw new UsageError(
      "--authorize needs --trust-domain-bundle: without client certificates there is no SPIFFE ID to authorize",
    );
  }
  for (const pattern of authorize) {
    const trustDomain = patternTrustDomain(pattern);
    if (!bundleFiles.has(trustDomain)) {
      throw new UsageError(
        `--authorize ${JSON.stringify(pattern.text)} names trust domain ${trustDomain}, which no --trust-domain-bundle configures, so no client of it can authenticate (configured: ${[...bundleFiles.keys()].join(", ")})`,
      );
    }
  }
  return { certFile, keyFile, bundleFiles, authorize };
}
