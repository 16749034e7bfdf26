/**
 * Why a connection to the TLS port never got to make a call: the reason
 * labels of `aether_config_tls_handshake_failures_total`. Either the TLS
 * handshake itself failed (Node's `tlsClientError`, classified here by the
 * error's code) or it completed and the client's X.509-SVID was refused by
 * the guard (`runtime/tls/svid-verify.ts`'s reasons, used as they are). Pure.
 */
import { SVID_REFUSAL_REASONS, type SvidRefusalReason } from "../../runtime/tls/svid-verify.js";

/** The reasons a handshake fails before any certificate is judged. */
export const TLS_ERROR_REASONS = [
  /** The first bytes were no TLS record: a plaintext HTTP/1.1 or h2c client, or another protocol. */
  "not_tls",
  /** The handshake did not finish within the header timeout. */
  "handshake_timeout",
  /** The client ended the handshake with an alert (for example: it does not trust this server). */
  "client_alert",
  /** The client went away during the handshake (a TCP probe, a reset). */
  "connection_lost",
  /** Anything else OpenSSL refused (no shared protocol or cipher, a bad signature). */
  "tls_error",
] as const;

/** One of {@link TLS_ERROR_REASONS}. */
export type TlsErrorReason = (typeof TLS_ERROR_REASONS)[number];

/** Every label of the handshake failure counter: TLS errors, then SVID refusals. */
export const HANDSHAKE_FAILURE_REASONS: readonly HandshakeFailureReason[] = [
  ...TLS_ERROR_REASONS,
  ...SVID_REFUSAL_REASONS,
];

/** Why a connection to the TLS port was refused. */
export type HandshakeFailureReason = TlsErrorReason | SvidRefusalReason;

/** OpenSSL's codes for a first record that is not TLS. */
const NOT_TLS_CODES = new Set([
  "ERR_SSL_HTTP_REQUEST",
  "ERR_SSL_HTTPS_PROXY_REQUEST",
  "ERR_SSL_WRONG_VERSION_NUMBER",
  "ERR_SSL_PACKET_LENGTH_TOO_LONG",
  "ERR_SSL_RECORD_LENGTH_MISMATCH",
]);

/** Codes of a peer that went away. */
const LOST_CODES = new Set([
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "ERR_SSL_UNEXPECTED_EOF_WHILE_READING",
]);

/** An alert the peer sent: OpenSSL names it `ERR_SSL_{SSLV3,TLSV1,TLSV13}_ALERT_<NAME>`. */
const ALERT_CODE = /^ERR_SSL_(SSLV3|TLSV1|TLSV13)_ALERT_/;

/**
 * The reason of a `tlsClientError`: by the error's `code` (see
 * {@link TLS_ERROR_REASONS}); an error without a known code is `tls_error`.
 */
export function tlsErrorReason(error: unknown): TlsErrorReason {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return "tls_error";
  if (NOT_TLS_CODES.has(code)) return "not_tls";
  if (code === "ERR_TLS_HANDSHAKE_TIMEOUT") return "handshake_timeout";
  if (ALERT_CODE.test(code)) return "client_alert";
  if (LOST_CODES.has(code)) return "connection_lost";
  return "tls_error";
}
