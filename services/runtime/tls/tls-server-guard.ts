/**
 * The X.509-SVID check wired into a TLS server (`tls.Server`, or an HTTP/2
 * or HTTPS server over it), before anything reads the connection: the check
 * is PREPENDED to `secureConnection`. The order matters: an HTTP/2 secure
 * server's own `secureConnection` listener starts the session, and a request
 * the client sent right behind its TLS 1.3 Finished reaches the `stream`
 * handler even when a later listener destroys the socket in the same tick
 * (seen on Node 20). The verdict is kept on the socket, where per-call
 * authorization finds it (also through HTTP/2's socket proxy, which forwards
 * property reads).
 */
import type { Server, TLSSocket } from "node:tls";
import type { SpiffeId } from "../../common/spiffe-id.js";
import { verifyTlsPeer } from "./peer-svid.js";
import type { SvidVerification } from "./svid-verify.js";
import type { TrustBundles } from "./trust-bundle.js";

const VERDICT = Symbol("aether.svidVerdict");

/** Options of {@link guardTlsServer}. */
export interface TlsServerGuardOptions {
  /** The bundles to verify against, read at each handshake (they rotate). */
  readonly bundles: () => TrustBundles;
  /** Default `Date.now`. */
  readonly now?: () => number;
  /** Called for each refused peer, after its socket is destroyed (count it by `verdict.reason`). */
  readonly onRefused?: (
    verdict: Extract<SvidVerification, { ok: false }>,
    socket: TLSSocket,
  ) => void;
  /** Called for each accepted peer (its ID is `verdict.id`). */
  readonly onAccepted?: (
    verdict: Extract<SvidVerification, { ok: true }>,
    socket: TLSSocket,
  ) => void;
}

/**
 * Verifies every client of `server` as it completes its handshake (the
 * server must request certificates: `requestCert: true`, and leave the
 * decision to this check: `rejectUnauthorized: false`); a refused one is
 * destroyed before any other listener sees it. Returns a function that
 * removes the check.
 */
export function guardTlsServer(server: Server, options: TlsServerGuardOptions): () => void {
  const { now = Date.now } = options;
  const check = (socket: TLSSocket) => {
    const verdict = verifyTlsPeer(socket, options.bundles(), { now });
    (socket as unknown as Record<symbol, SvidVerification>)[VERDICT] = verdict;
    if (verdict.ok) {
      options.onAccepted?.(verdict, socket);
      return;
    }
    socket.destroy();
    options.onRefused?.(verdict, socket);
  };
  server.prependListener("secureConnection", check);
  return () => {
    server.off("secureConnection", check);
  };
}

/**
 * The SPIFFE ID a guarded server accepted for the connection of `socket`
 * (a TLS socket, or the HTTP/2 proxy of one: `request.socket`,
 * `stream.session.socket`); undefined when the connection was not checked.
 */
export function peerSpiffeId(socket: object | null | undefined): SpiffeId | undefined {
  const verdict = (socket as Record<symbol, SvidVerification | undefined> | null | undefined)?.[
    VERDICT
  ];
  return verdict?.ok === true ? verdict.id : undefined;
}
