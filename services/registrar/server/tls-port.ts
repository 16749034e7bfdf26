/**
 * The TLS port (`--tls-cert-file`): one HTTP/2 secure server with HTTP/1.1
 * allowed owns the port, and ALPN (`h2`, `http/1.1`) chooses the protocol,
 * so Connect, gRPC and gRPC-Web keep sharing it. Every limit of the
 * plaintext port applies (`connection-tracking.ts`; the HTTP/1.1 header
 * size and timeouts are set on the secure server, whose HTTP/1.1
 * connections Node serves with them), and the handshake itself must finish
 * within the header timeout. A plaintext connection fails its handshake.
 *
 * With `--trust-domain-bundle`, clients must present an X.509-SVID: the
 * guard (`runtime/tls/tls-server-guard.ts`) verifies it before any other
 * listener sees the connection, and every request is then decided by
 * `--authorize` (`call-authorization.ts`) before its body is read: a denied
 * one gets PermissionDenied in its own protocol.
 *
 * The certificate, key and bundles come from a material source that re-reads
 * them when their files change: new handshakes use new material, open
 * connections keep theirs, a refused re-read keeps the old material. TLS
 * session resumption is off (no tickets, no session cache): a resumed
 * session carries no peer chain to verify, and would skip a rotated bundle.
 */
import { constants as cryptoConstants } from "node:crypto";
import type { Server as Http1Server } from "node:http";
import { createSecureServer } from "node:http2";
import type { SecureContextOptions, TLSSocket } from "node:tls";
import type { AuthorizePattern } from "../../common/spiffe-authorize.js";
import type { TlsMaterial } from "../../runtime/tls/tls-material.js";
import {
  openTlsMaterialSource,
  type TlsMaterialSource,
} from "../../runtime/tls/tls-material-source.js";
import { guardTlsServer, peerSpiffeId } from "../../runtime/tls/tls-server-guard.js";
import { type CallRules, decideCall } from "./call-authorization.js";
import { type ConnectionTrackingOptions, trackConnections } from "./connection-tracking.js";
import { tlsErrorReason } from "./handshake-failure.js";
import { http1ServerOptions, http2ServerOptions } from "./node-server-options.js";
import { refuseRequest } from "./refusal-response.js";
import type { ServerLimits } from "./server-limits.js";
import type { PortRequestHandler, ServerPort } from "./server-port.js";
import type { TlsMetrics } from "./tls-metrics.js";

/** How the port serves TLS (the registrar's TLS flags). */
export interface TlsPortOptions {
  /** The serving certificate chain (PEM, leaf first). */
  readonly certFile: string;
  /** Its private key (PEM). */
  readonly keyFile: string;
  /** Trust domain → bundle file; empty: no client certificates are asked for. */
  readonly bundleFiles: ReadonlyMap<string, string>;
  /** The client IDs that may call; empty: every verified ID. */
  readonly authorize: readonly AuthorizePattern[];
  /** How often the files are re-stat'ed besides being watched, in milliseconds; default 5000. */
  readonly pollIntervalMs?: number;
  /** The clock client certificates are judged at; default `Date.now`. */
  readonly now?: () => number;
}

/** What {@link createTlsPort} needs besides its options. */
export interface TlsPortContext {
  readonly limits: ServerLimits;
  readonly onRequest: PortRequestHandler;
  readonly tracking: ConnectionTrackingOptions;
  readonly metrics: TlsMetrics;
}

/** No TLS session tickets: with no session cache either, nothing is resumed. */
const NO_RESUMPTION = cryptoConstants.SSL_OP_NO_TICKET;

/** The longest request path quoted in a denial. */
const MAX_QUOTED_PATH = 256;

/** What `setSecureContext` takes for `material` (it replaces every context option, so all of them). */
function contextOptions(material: TlsMaterial): SecureContextOptions {
  return { ...material.secureContextOptions(), secureOptions: NO_RESUMPTION };
}

/** Creates the TLS port (see the module comment); it serves once {@link ServerPort.open} read the files. */
export function createTlsPort(options: TlsPortOptions, context: TlsPortContext): ServerPort {
  const { limits, metrics, tracking } = context;
  const rules: CallRules = { mutual: options.bundleFiles.size > 0, authorize: options.authorize };
  let source: TlsMaterialSource | undefined;
  const server = createSecureServer(
    {
      ...http2ServerOptions(limits),
      allowHTTP1: true,
      requestCert: rules.mutual,
      rejectUnauthorized: false,
      handshakeTimeout: limits.headerTimeoutMs,
      secureOptions: NO_RESUMPTION,
    },
    context.onRequest,
  );
  // Read by Node's HTTP/1.1 connection handling of the secure server.
  Object.assign(server, http1ServerOptions(limits), { keepAliveTimeout: limits.idleTimeoutMs });
  if (rules.mutual) {
    guardTlsServer(server, {
      bundles: () => source?.material.bundles ?? new Map(),
      ...(options.now === undefined ? {} : { now: options.now }),
      onRefused: (verdict, socket) =>
        metrics.handshakeFailed(verdict.reason, {
          remoteAddress: socket.remoteAddress,
          detail: verdict.message,
        }),
    });
  }
  server.on("tlsClientError", (error: NodeJS.ErrnoException, socket: TLSSocket) => {
    // A connection destroyed by draining is no client's failure.
    if (tracking.drainSignal.aborted) return;
    metrics.handshakeFailed(tlsErrorReason(error), {
      remoteAddress: socket.remoteAddress,
      code: error.code ?? null,
    });
  });
  const connections = trackConnections({ port: server, http1: server, h2: server }, tracking);

  return {
    listener: server,
    fastifyServer: server as unknown as Http1Server,
    connections,
    scheme: "https",
    async open() {
      if (source !== undefined) return;
      source = await openTlsMaterialSource({
        certFile: options.certFile,
        keyFile: options.keyFile,
        bundleFiles: options.bundleFiles,
        ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
        onUpdate: (material) => {
          server.setSecureContext(contextOptions(material));
          metrics.materialTaken(material, false);
        },
        onRejected: (rejection) => metrics.materialRefused(rejection),
      });
      server.setSecureContext(contextOptions(source.material));
      metrics.materialTaken(source.material, true);
    },
    admit(req, res) {
      const path = (req.url ?? "/").split("?", 1)[0]?.slice(0, MAX_QUOTED_PATH) ?? "/";
      const peer = peerSpiffeId(req.socket);
      const decision = decideCall(peer, rules, path);
      if (decision.allowed) return true;
      metrics.callDenied(decision.reason, {
        peer: peer?.text ?? null,
        path,
        remoteAddress: req.socket?.remoteAddress,
      });
      refuseRequest(req, res, decision.code, decision.message, 0);
      return false;
    },
    closeIdle() {
      // Node's HTTP/1.1 tracking on a secure server that allows HTTP/1.1.
      (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
    },
    close() {
      source?.close();
    },
  };
}
