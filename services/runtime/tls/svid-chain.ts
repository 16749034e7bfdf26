/**
 * Certification path building for X.509-SVIDs: from the leaf, through the
 * intermediates the peer sent, to a CA of ONE trust domain's bundle. Node's
 * TLS checks a chain against one pool of every trusted CA, so a CA trusted
 * for `east.mesh` would vouch for a `spiffe://hub.mesh/...` ID; this check
 * takes the anchors from the bundle of the trust domain the ID names and
 * nothing else. Every link is checked with node:crypto: the issuer's name
 * and key identifier (`checkIssued`), the signature (`verify`), and every
 * certificate on the path is a CA valid at `now`. Pure, synchronous.
 */
import type { X509Certificate } from "node:crypto";
import { oneLineName } from "./pem.js";

/** The most certificates a path may have, leaf and anchor included. */
export const MAX_PATH_LENGTH = 8;

/** The milliseconds since the epoch between which a certificate is valid. */
export function validityWindow(certificate: X509Certificate): { from: number; to: number } {
  return { from: Date.parse(certificate.validFrom), to: Date.parse(certificate.validTo) };
}

/** Whether `certificate` is valid at `now` (a window that does not parse is never valid). */
export function isValidAt(certificate: X509Certificate, now: number): boolean {
  const { from, to } = validityWindow(certificate);
  return from <= now && now <= to;
}

/** Whether `issuer` issued and signed `subject`. */
function issued(subject: X509Certificate, issuer: X509Certificate): boolean {
  try {
    return subject.checkIssued(issuer) && subject.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

/** What {@link findTrustedPath} found: the path (leaf first, anchor last), or why there is none. */
export type PathResult =
  | { readonly path: readonly X509Certificate[]; readonly problem?: undefined }
  | { readonly path?: undefined; readonly problem: string };

/**
 * Finds a path from `leaf` through some of `intermediates` (in any order;
 * extra ones are fine) to one of `anchors`, every certificate on it a CA
 * valid at `now` except the leaf (whose own checks are the caller's). On
 * failure, says what was missing: an issuer among the anchors, or a valid
 * one.
 */
export function findTrustedPath(
  leaf: X509Certificate,
  intermediates: readonly X509Certificate[],
  anchors: readonly X509Certificate[],
  now: number,
): PathResult {
  let expiredIssuer: X509Certificate | undefined;
  const visit = (
    current: X509Certificate,
    path: X509Certificate[],
  ): X509Certificate[] | undefined => {
    for (const anchor of anchors) {
      if (!issued(current, anchor)) continue;
      if (isValidAt(anchor, now)) return [...path, anchor];
      expiredIssuer ??= anchor;
    }
    if (path.length + 1 >= MAX_PATH_LENGTH) return undefined;
    for (const candidate of intermediates) {
      if (path.includes(candidate) || !candidate.ca || !issued(current, candidate)) continue;
      if (!isValidAt(candidate, now)) {
        expiredIssuer ??= candidate;
        continue;
      }
      const found = visit(candidate, [...path, candidate]);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  const path = visit(leaf, [leaf]);
  if (path !== undefined) return { path };
  if (expiredIssuer !== undefined) {
    return {
      problem: `its issuer ${oneLineName(expiredIssuer.subject)} is outside its validity window`,
    };
  }
  return { problem: `no chain from ${oneLineName(leaf.issuer)} to a CA of the bundle` };
}
