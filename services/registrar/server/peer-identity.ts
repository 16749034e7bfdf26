/**
 * The caller's SPIFFE ID as ConfigService handlers (and interceptors) see
 * it: a context value of every call, read from the connection's verdict
 * that the TLS guard left on its socket (`runtime/tls/tls-server-guard.ts`).
 * Undefined on a plaintext port and on a TLS port without client
 * certificates.
 */
import { type ContextValues, createContextKey, createContextValues } from "@connectrpc/connect";
import type { SpiffeId } from "../../common/spiffe-id.js";
import { peerSpiffeId } from "../../runtime/tls/tls-server-guard.js";

/**
 * The verified SPIFFE ID of the call's client:
 * `context.values.get(PEER_SPIFFE_ID)` in a handler.
 */
export const PEER_SPIFFE_ID = createContextKey<SpiffeId | undefined>(undefined, {
  description: "the verified SPIFFE ID of the client",
});

/**
 * The context values of a call that arrived on `socket` (an HTTP/1.1
 * request's socket or HTTP/2's socket proxy); connect-fastify's
 * `contextValues` option.
 */
export function peerContextValues(socket: object | null | undefined): ContextValues {
  return createContextValues().set(PEER_SPIFFE_ID, peerSpiffeId(socket));
}
