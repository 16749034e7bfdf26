/**
 * X.509-SVID verification of a TLS peer (the X.509-SVID standard, section
 * 5): exactly one URI SAN, a valid SPIFFE ID with a path; a leaf (not a CA,
 * no keyCertSign or cRLSign key usage);
 * inside its validity window at `now`; and a chain to a CA of the bundle of
 * the trust domain its ID names (svid-chain.ts). The answer is typed: the
 * ID, or a refusal with a reason code (a metric label) and a sentence that
 * names the certificate and the ID, never key material. Pure over node:crypto
 * certificates; the clock is the caller's.
 */
import type { X509Certificate } from "node:crypto";
import { parseSpiffeId, type SpiffeId } from "../../common/spiffe-id.js";
import { certificateKeyUsage, type KeyUsage } from "./key-usage.js";
import { describeCertificate } from "./pem.js";
import { parseSubjectAltNames } from "./subject-alt-names.js";
import { findTrustedPath, validityWindow } from "./svid-chain.js";
import type { TrustBundles } from "./trust-bundle.js";

/** Every reason a peer's certificate is refused, as metric labels. */
export const SVID_REFUSAL_REASONS = [
  "no_certificate",
  "bad_certificate",
  "no_spiffe_id",
  "multiple_uri_sans",
  "invalid_spiffe_id",
  "leaf_is_ca",
  "expired",
  "not_yet_valid",
  "unknown_trust_domain",
  "untrusted_chain",
  "unexpected_spiffe_id",
] as const;

/** Why a peer's certificate was refused (see {@link SVID_REFUSAL_REASONS}). */
export type SvidRefusalReason = (typeof SVID_REFUSAL_REASONS)[number];

/** The verdict on a peer: its SPIFFE ID, or a refusal (with the ID when it got that far). */
export type SvidVerification =
  | { readonly ok: true; readonly id: SpiffeId; readonly leaf: X509Certificate }
  | {
      readonly ok: false;
      readonly reason: SvidRefusalReason;
      readonly message: string;
      readonly id?: SpiffeId;
    };

/** Options of {@link verifySvid}. */
export interface SvidVerifyOptions {
  /** The time to check validity at, in milliseconds since the epoch. */
  readonly now: number;
  /** When set, the only SPIFFE ID accepted (a client's `--registrar-spiffe-id`). */
  readonly expectedId?: string;
}

function refuse(reason: SvidRefusalReason, message: string, id?: SpiffeId): SvidVerification {
  return id === undefined ? { ok: false, reason, message } : { ok: false, reason, message, id };
}

/** The leaf's SPIFFE ID, or the refusal of its subject alternative names. */
function leafSpiffeId(leaf: X509Certificate, what: string): SpiffeId | SvidVerification {
  let uris: string[];
  try {
    uris = parseSubjectAltNames(leaf.subjectAltName)
      .filter((name) => name.type === "URI")
      .map((name) => name.value);
  } catch (error) {
    return refuse(
      "bad_certificate",
      `${what}: unreadable subject alternative names (${(error as Error).message})`,
    );
  }
  if (uris.length === 0) return refuse("no_spiffe_id", `${what} has no URI SAN, so no SPIFFE ID`);
  if (uris.length > 1) {
    return refuse(
      "multiple_uri_sans",
      `${what} has ${uris.length} URI SANs (${uris.join(", ")}); an X.509-SVID has exactly one`,
    );
  }
  const uri = uris[0] as string;
  if (!/^spiffe:/i.test(uri)) {
    return refuse(
      "no_spiffe_id",
      `${what}: its URI SAN ${JSON.stringify(uri)} is not a spiffe:// ID`,
    );
  }
  const parsed = parseSpiffeId(uri);
  if (parsed.error !== undefined) return refuse("invalid_spiffe_id", `${what}: ${parsed.error}`);
  if (parsed.id.path === "") {
    return refuse(
      "invalid_spiffe_id",
      `${what}: ${uri} names a trust domain; a leaf SVID's ID has a path`,
    );
  }
  return parsed.id;
}

/** Why `leaf` is a signing certificate rather than a leaf (CA:TRUE, keyCertSign, cRLSign), or undefined. */
function leafSigningProblem(leaf: X509Certificate): string | undefined {
  if (leaf.ca) return "is a CA (basicConstraints CA:TRUE); an SVID is a leaf";
  let usage: KeyUsage | undefined;
  try {
    usage = certificateKeyUsage(leaf.raw);
  } catch (error) {
    return `has a key usage that cannot be read (${(error as Error).message})`;
  }
  const signs = [usage?.keyCertSign && "keyCertSign", usage?.cRLSign && "cRLSign"].filter(Boolean);
  if (signs.length > 0) return `has the key usage ${signs.join(" and ")}; an SVID is a leaf`;
  return undefined;
}

/**
 * Verifies a peer's certificate chain as sent (`chain[0]` the leaf, then
 * any intermediates, in any order) against `bundles` at `options.now`.
 * An empty chain is `no_certificate`.
 */
export function verifySvid(
  chain: readonly X509Certificate[],
  bundles: TrustBundles,
  options: SvidVerifyOptions,
): SvidVerification {
  const [leaf, ...intermediates] = chain;
  if (leaf === undefined) return refuse("no_certificate", "the peer sent no certificate");
  const what = `certificate ${describeCertificate(leaf)}`;
  const id = leafSpiffeId(leaf, what);
  if ("ok" in id) return id;
  const signer = leafSigningProblem(leaf);
  if (signer !== undefined) return refuse("leaf_is_ca", `${what} (${id.text}) ${signer}`, id);
  const { from, to } = validityWindow(leaf);
  if (!(options.now >= from)) {
    return refuse(
      "not_yet_valid",
      `${what} (${id.text}) is not valid before ${leaf.validFrom}`,
      id,
    );
  }
  if (!(options.now <= to)) {
    return refuse("expired", `${what} (${id.text}) expired at ${leaf.validTo}`, id);
  }
  const bundle = bundles.get(id.trustDomain);
  if (bundle === undefined) {
    return refuse(
      "unknown_trust_domain",
      `${what}: ${id.text} is in trust domain ${id.trustDomain}, which has no configured bundle`,
      id,
    );
  }
  const path = findTrustedPath(leaf, intermediates, bundle.authorities, options.now);
  if (path.problem !== undefined) {
    return refuse(
      "untrusted_chain",
      `${what}: ${id.text} does not chain to trust domain ${id.trustDomain}'s bundle (${bundle.source}): ${path.problem}`,
      id,
    );
  }
  if (options.expectedId !== undefined && id.text !== options.expectedId) {
    return refuse(
      "unexpected_spiffe_id",
      `${what}: the peer is ${id.text}, not ${options.expectedId}`,
      id,
    );
  }
  return { ok: true, id, leaf };
}
