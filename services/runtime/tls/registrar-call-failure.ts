/**
 * Whether a failed call to a registrar failed on trust, and why: the
 * registrar's certificate refused by us (our SVID check or OpenSSL's), our
 * certificate refused by the registrar (it closes the connection right after
 * the TLS 1.3 handshake, with no alert: HTTP/2 sees the stream CANCELed,
 * HTTP/1.1 a socket hang-up), another TLS handshake failure, or the caller's
 * SPIFFE ID denied (PermissionDenied). aetherctl prints it; the agent
 * reports it on /readyz and counts it. Pure.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { tlsErrorReason } from "./peer-svid.js";
import { SVID_REFUSAL_REASONS, type SvidRefusalReason } from "./svid-verify.js";

/** Why a call failed on trust: the server's certificate refused (an SVID reason), or one of ours. */
export type TrustFailureReason =
  | SvidRefusalReason
  | "refused_by_registrar"
  | "tls_handshake"
  | "permission_denied";

/** Every {@link TrustFailureReason}, for a metric's label values. */
export const TRUST_FAILURE_REASONS: readonly TrustFailureReason[] = [
  ...SVID_REFUSAL_REASONS,
  "refused_by_registrar",
  "tls_handshake",
  "permission_denied",
];

/** A trust failure: the reason (a metric label) and one sentence. */
export interface TrustFailure {
  readonly reason: TrustFailureReason;
  readonly message: string;
}

/** The error and its causes, outermost first (at most 5 deep). */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  let current = error;
  while (current !== undefined && current !== null && chain.length < 5) {
    chain.push(current);
    current = (current as { cause?: unknown }).cause;
  }
  return chain;
}

const CLOSED_AFTER_HANDSHAKE = /stream closed with error code (NGHTTP2_)?CANCEL|socket hang up/i;

/**
 * The trust failure of a failed call over TLS, or undefined when it failed
 * otherwise (unreachable, a timeout, an application error). `error` is what
 * the generated client threw.
 */
export function trustFailureOf(error: unknown): TrustFailure | undefined {
  const connectError = ConnectError.from(error);
  if (connectError.code === Code.PermissionDenied) {
    return { reason: "permission_denied", message: connectError.rawMessage };
  }
  for (const cause of causes(error)) {
    const reason = tlsErrorReason(cause);
    if (reason !== undefined) {
      const message = (cause as Error).message;
      return { reason, message: `we refused the registrar's certificate (${reason}): ${message}` };
    }
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && (code.startsWith("ERR_SSL_") || code === "EPROTO")) {
      return {
        reason: "tls_handshake",
        message: `the TLS handshake failed (${code}): ${(cause as Error).message}`,
      };
    }
  }
  if (CLOSED_AFTER_HANDSHAKE.test(connectError.rawMessage)) {
    return {
      reason: "refused_by_registrar",
      message: `the registrar closed the connection after the handshake: it probably refused our certificate (${connectError.rawMessage})`,
    };
  }
  return undefined;
}
