/**
 * A process's own TLS identity from the text of `--tls-cert-file` (the leaf,
 * then any intermediates) and `--tls-key-file`: both must parse and the key
 * must be the certificate's (a half-written file or a certificate rotated
 * before its key is refused, with a reason). The key is held only as a
 * KeyObject and inside the TLS context options built from it; no message
 * quotes it. Pure over its input text.
 */
import { createPrivateKey, type KeyObject, type X509Certificate } from "node:crypto";
import { parseSpiffeId, type SpiffeId } from "../../common/spiffe-id.js";
import { describeCertificate, pemCertificates } from "./pem.js";
import { parseSubjectAltNames } from "./subject-alt-names.js";

/** A certificate chain and the private key of its leaf. */
export interface TlsIdentity {
  /** The leaf first, then the intermediates, as the file gave them. */
  readonly chain: readonly X509Certificate[];
  readonly leaf: X509Certificate;
  /** The private key (a KeyObject serializes to `{}`, so a logged identity shows no key). */
  readonly privateKey: KeyObject;
  /** The leaf's serial number (upper-case hexadecimal). */
  readonly serial: string;
  /** When the leaf expires, in milliseconds since the epoch (the serving certificate's expiry metric). */
  readonly notAfter: number;
  /** The leaf's SPIFFE ID, when it has exactly one valid one. */
  readonly spiffeId?: SpiffeId;
}

/** Why a certificate and key were not taken. */
export type IdentityProblem = {
  readonly reason: "certificate_invalid" | "key_invalid" | "key_mismatch";
  readonly message: string;
};

/** The one valid SPIFFE ID among the leaf's URI SANs, if there is exactly one. */
function ownSpiffeId(leaf: X509Certificate): SpiffeId | undefined {
  try {
    const uris = parseSubjectAltNames(leaf.subjectAltName).filter((name) => name.type === "URI");
    return uris.length === 1 ? parseSpiffeId((uris[0] as { value: string }).value).id : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `privateKey` is the key of `leaf` (a key of another type is not). */
function keyMatches(leaf: X509Certificate, privateKey: KeyObject): boolean {
  try {
    return leaf.checkPrivateKey(privateKey);
  } catch {
    return false;
  }
}

/**
 * Reads an identity from the certificate file's text (`certPath` names it
 * in messages; blocks other than certificates are skipped) and the key
 * file's. Returns the identity, or the problem: `certificate_invalid`,
 * `key_invalid` (with only the error's code, never the text) or
 * `key_mismatch`.
 */
export function parseTlsIdentity(
  certText: string,
  certPath: string,
  keyText: string,
  keyPath: string,
): TlsIdentity | IdentityProblem {
  let chain: X509Certificate[];
  try {
    chain = pemCertificates(certText, certPath, true);
  } catch (error) {
    return { reason: "certificate_invalid", message: (error as Error).message };
  }
  const leaf = chain[0] as X509Certificate;
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(keyText);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const why =
      keyText.trim() === ""
        ? "it is empty"
        : `no PEM private key (${String(code ?? "unreadable")})`;
    return { reason: "key_invalid", message: `${keyPath}: ${why}` };
  }
  if (!keyMatches(leaf, privateKey)) {
    return {
      reason: "key_mismatch",
      message: `${keyPath} is not the key of ${certPath} (certificate ${describeCertificate(leaf)}): a certificate and key from different pairs`,
    };
  }
  const spiffeId = ownSpiffeId(leaf);
  const identity = {
    chain,
    leaf,
    privateKey,
    serial: leaf.serialNumber,
    notAfter: Date.parse(leaf.validTo),
  };
  return spiffeId === undefined ? identity : { ...identity, spiffeId };
}
