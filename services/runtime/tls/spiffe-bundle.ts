/**
 * A SPIFFE bundle (the SPIFFE Trust Domain and Bundle standard): a JWK set,
 * as SPIRE's federation endpoint serves it, whose `x509-svid` keys carry
 * their CA certificate in `x5c`. As the standard says, an entry whose `use`
 * is missing or not `x509-svid` (a `jwt-svid` key) is skipped, as is an
 * `x509-svid` entry without `x5c` or with a key type Node does not know;
 * those are listed, not errors. What cannot be a valid bundle is an error: not
 * JSON, no `keys` array, an entry that is not an object, an `x5c` that is not a
 * base64 DER certificate, a certificate that is not a CA, or key parameters
 * that do not match the certificate's key. Pure over its input text.
 */
import { createPublicKey, type JsonWebKey, X509Certificate } from "node:crypto";

/** What a SPIFFE bundle yields for X.509 (see the module comment). */
export interface SpiffeBundleContent {
  readonly authorities: X509Certificate[];
  readonly ignored: string[];
  readonly sequence?: number;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const KEY_TYPES = new Set(["EC", "RSA", "OKP"]);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The CA certificate of one `x509-svid` entry; throws (naming `where`) when it is not one. */
function entryCertificate(x5c: unknown, where: string): X509Certificate {
  const text = typeof x5c === "string" ? x5c.replace(/\s/g, "") : "";
  let certificate: X509Certificate | undefined;
  if (BASE64.test(text)) {
    try {
      certificate = new X509Certificate(Buffer.from(text, "base64"));
    } catch {
      certificate = undefined;
    }
  }
  if (certificate === undefined) {
    throw new Error(`${where}: x5c[0] is not a base64 DER certificate`);
  }
  if (!certificate.ca) {
    throw new Error(`${where}: the x5c certificate is not a CA (basicConstraints CA:TRUE)`);
  }
  return certificate;
}

/** Throws (naming `where`) when the entry's key parameters are not the certificate's key. */
function checkKeyParameters(entry: Record<string, unknown>, cert: X509Certificate, where: string) {
  let own: Buffer;
  try {
    own = createPublicKey({ key: entry as JsonWebKey, format: "jwk" }).export({
      type: "spki",
      format: "der",
    });
  } catch {
    throw new Error(`${where}: its ${String(entry.kty)} key parameters are not a valid public key`);
  }
  const certified = cert.publicKey.export({ type: "spki", format: "der" });
  if (!own.equals(certified)) {
    throw new Error(`${where}: its key parameters are not the key of its x5c certificate`);
  }
}

/**
 * Parses a SPIFFE bundle read from `source` (a path, for messages). Returns
 * the X.509 authorities (possibly none), the skipped entries and the
 * sequence number; throws an Error naming the source and the entry otherwise.
 */
export function parseSpiffeBundle(text: string, source: string): SpiffeBundleContent {
  let bundle: unknown;
  try {
    bundle = JSON.parse(text);
  } catch (error) {
    throw new Error(`${source} is not valid JSON (${(error as Error).message.slice(0, 120)})`);
  }
  if (!isObject(bundle) || !Array.isArray(bundle.keys)) {
    throw new Error(`${source} is not a SPIFFE bundle: it has no "keys" array (a JWK set)`);
  }
  const authorities: X509Certificate[] = [];
  const ignored: string[] = [];
  for (const [index, entry] of bundle.keys.entries()) {
    const where = `${source}: key ${index + 1}`;
    if (!isObject(entry)) throw new Error(`${where} is not a JSON object`);
    if (entry.use !== "x509-svid") {
      ignored.push(
        entry.use === undefined
          ? `${where} has no "use"`
          : `${where} is for ${JSON.stringify(entry.use)}, not x509-svid`,
      );
      continue;
    }
    if (!Array.isArray(entry.x5c) || entry.x5c.length === 0) {
      ignored.push(`${where} (x509-svid) has no x5c certificate`);
      continue;
    }
    if (typeof entry.kty !== "string" || !KEY_TYPES.has(entry.kty)) {
      ignored.push(
        `${where} (x509-svid) has key type ${JSON.stringify(entry.kty)}, not EC, RSA or OKP`,
      );
      continue;
    }
    const certificate = entryCertificate(entry.x5c[0], where);
    checkKeyParameters(entry, certificate, where);
    authorities.push(certificate);
  }
  const sequence = Number.isSafeInteger(bundle.spiffe_sequence)
    ? (bundle.spiffe_sequence as number)
    : undefined;
  return sequence === undefined ? { authorities, ignored } : { authorities, ignored, sequence };
}
