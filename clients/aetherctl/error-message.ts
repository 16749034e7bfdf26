/**
 * The one-line message aetherctl prints on stderr when a call fails:
 * `aetherctl: <code>: <message>`, with the Connect code as it is written on
 * the wire (`unavailable`, `invalid_argument`, …). A registrar that cannot be
 * reached, or a server that is not a registrar, gets a message saying so and
 * naming the URL; over TLS, a trust failure (a certificate refused by
 * either side, a failed handshake) says which. Pure.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { trustFailureOf } from "../../services/runtime/tls/registrar-call-failure.js";

/** Network error codes that mean "nothing answered at that address". */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EPIPE",
]);

function systemErrorCode(error: ConnectError): string | undefined {
  const cause = error.cause as { code?: unknown } | undefined;
  return typeof cause?.code === "string" ? cause.code : undefined;
}

/**
 * Formats a failed call to `registrar` as the line printed on stderr (with a
 * final `\n`). Anything that is not a ConnectError is reported as `unknown`.
 * With `tls` (an https:// registrar), a trust failure is named: `aetherctl:
 * tls: REASON: …`, except PermissionDenied, which prints the registrar's
 * message (it names our SPIFFE ID) as any other code does.
 */
export function describeCallError(error: unknown, registrar: string, tls = false): string {
  const connectError = ConnectError.from(error);
  const code = codeToString(connectError.code);
  const trust = tls ? trustFailureOf(error) : undefined;
  if (trust !== undefined && trust.reason !== "permission_denied") {
    return `aetherctl: tls: ${trust.reason}: ${registrar}: ${trust.message}\n`;
  }
  const systemCode = systemErrorCode(connectError);
  let message = connectError.rawMessage;
  if (
    connectError.code === Code.Unavailable &&
    systemCode !== undefined &&
    UNREACHABLE.has(systemCode)
  ) {
    message = `cannot reach the registrar at ${registrar} (${connectError.rawMessage}); is it running? (set --registrar URL or $AETHER_REGISTRAR)`;
  } else if (connectError.code === Code.DeadlineExceeded) {
    message = `the registrar at ${registrar} did not answer in time (${connectError.rawMessage}); raise --timeout or check the registrar`;
  } else if (connectError.code === Code.Unimplemented && /^HTTP 404/.test(message)) {
    message = `${registrar} does not serve aether.registry.v1.ConfigService (${message}); is it a registrar?`;
  }
  return `aetherctl: ${code}: ${message}\n`;
}
