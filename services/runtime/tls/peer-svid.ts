/**
 * The X.509-SVID check on a live TLS connection, both sides:
 *
 * - a server (`requestCert: true, rejectUnauthorized: false`, `ca` every
 *   bundle's CAs so that clients know what to present) calls
 *   {@link verifyTlsPeer} on each `secureConnection` socket and destroys the
 *   socket on a refusal: the reason is ours (a metric label), not OpenSSL's;
 * - a client (`rejectUnauthorized: true`, `ca` every bundle's CAs) passes
 *   {@link spiffeServerIdentity} as `checkServerIdentity`, so that the
 *   server's SPIFFE ID and its trust domain's bundle are checked instead of
 *   its host name; OpenSSL's own refusals map to the same reasons with
 *   {@link tlsErrorReason}.
 */
import { X509Certificate } from "node:crypto";
import type { DetailedPeerCertificate, PeerCertificate, TLSSocket } from "node:tls";
import { type SvidRefusalReason, type SvidVerification, verifySvid } from "./svid-verify.js";
import type { TrustBundles } from "./trust-bundle.js";

/** A refused peer as an Error: `code` is `ERR_SVID_<REASON>`, `reason` the metric label. */
export class SvidRefusedError extends Error {
  override readonly name = "SvidRefusedError";
  readonly code: string;

  /** Wraps a refusal; the message is the refusal's sentence. */
  constructor(
    readonly reason: SvidRefusalReason,
    message: string,
  ) {
    super(message);
    this.code = `ERR_SVID_${reason.toUpperCase()}`;
  }
}

/**
 * The certificates of a peer as Node gives them (`getPeerCertificate(true)`:
 * the leaf, then each `issuerCertificate` until a self-issued one or the
 * end), parsed. Undefined when there is none; throws when one does not parse.
 */
export function peerCertificateChain(
  peer: PeerCertificate | DetailedPeerCertificate | Record<string, never> | null | undefined,
): X509Certificate[] | undefined {
  const chain: X509Certificate[] = [];
  const seen = new Set<object>();
  let current = peer as Partial<DetailedPeerCertificate> | null | undefined;
  while (current?.raw !== undefined && !seen.has(current)) {
    seen.add(current);
    chain.push(new X509Certificate(current.raw));
    current = current.issuerCertificate;
  }
  return chain.length === 0 ? undefined : chain;
}

/** Options of the peer checks: the clock and, for a client, the one server ID accepted. */
export interface PeerCheckOptions {
  /** Default `Date.now`. */
  readonly now?: () => number;
  readonly expectedId?: string;
}

/** Verifies what `peer` presented (see {@link peerCertificateChain}) against `bundles`. */
export function verifyPeerCertificate(
  peer: PeerCertificate | DetailedPeerCertificate | Record<string, never> | null | undefined,
  bundles: TrustBundles,
  options: PeerCheckOptions = {},
): SvidVerification {
  let chain: X509Certificate[];
  try {
    chain = peerCertificateChain(peer) ?? [];
  } catch (error) {
    return {
      ok: false,
      reason: "bad_certificate",
      message: `the peer's certificate does not parse (${(error as Error).message})`,
    };
  }
  const { now = Date.now, expectedId } = options;
  return verifySvid(
    chain,
    bundles,
    expectedId === undefined ? { now: now() } : { now: now(), expectedId },
  );
}

/**
 * Verifies the peer of a connected TLS socket (server or client side) against
 * `bundles`. The chain is taken as parsed certificates
 * (`getPeerX509Certificate()` and its `issuerCertificate` links): building
 * `getPeerCertificate(true)`'s objects and parsing each certificate again was
 * most of this check's cost, about 1.8 ms of CPU per mTLS connection.
 */
export function verifyTlsPeer(
  socket: TLSSocket,
  bundles: TrustBundles,
  options: PeerCheckOptions = {},
): SvidVerification {
  const chain: X509Certificate[] = [];
  const seen = new Set<string>();
  let current = socket.getPeerX509Certificate();
  while (current !== undefined && !seen.has(current.fingerprint256)) {
    seen.add(current.fingerprint256);
    chain.push(current);
    current = current.issuerCertificate;
  }
  const { now = Date.now, expectedId } = options;
  return verifySvid(
    chain,
    bundles,
    expectedId === undefined ? { now: now() } : { now: now(), expectedId },
  );
}

/**
 * A `checkServerIdentity` for a client: the server must present an
 * X.509-SVID of a configured trust domain (`bundles()` is read at each
 * handshake, so rotated bundles apply), and be `expectedId` when given. The
 * host name is not checked. Returns a {@link SvidRefusedError} on refusal.
 */
export function spiffeServerIdentity(
  bundles: () => TrustBundles,
  options: PeerCheckOptions = {},
): (hostname: string, certificate: PeerCertificate) => Error | undefined {
  return (_hostname, certificate) => {
    const verdict = verifyPeerCertificate(certificate, bundles(), options);
    return verdict.ok ? undefined : new SvidRefusedError(verdict.reason, verdict.message);
  };
}

const OPENSSL_REASONS: Readonly<Record<string, SvidRefusalReason>> = {
  CERT_HAS_EXPIRED: "expired",
  CERT_NOT_YET_VALID: "not_yet_valid",
  UNABLE_TO_GET_ISSUER_CERT: "untrusted_chain",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "untrusted_chain",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "untrusted_chain",
  SELF_SIGNED_CERT_IN_CHAIN: "untrusted_chain",
  DEPTH_ZERO_SELF_SIGNED_CERT: "untrusted_chain",
  CERT_SIGNATURE_FAILURE: "untrusted_chain",
  INVALID_CA: "untrusted_chain",
};

/**
 * The refusal reason of a TLS error a client saw: ours for a
 * {@link SvidRefusedError}, the matching one for OpenSSL's certificate
 * errors (by `code`), and undefined for anything else (a network error, a
 * handshake alert).
 */
export function tlsErrorReason(error: unknown): SvidRefusalReason | undefined {
  if (error instanceof SvidRefusedError) return error.reason;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? OPENSSL_REASONS[code] : undefined;
}
