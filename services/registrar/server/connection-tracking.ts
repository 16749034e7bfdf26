/**
 * What every port of the registrar does with its connections, plaintext or
 * TLS: every connection and HTTP/2 session is tracked until it closes, so
 * that draining can close the idle ones, wait for the rest, and destroy
 * what is left when the grace period is over.
 *
 * The connection limit is the port-owning server's `maxConnections`: a
 * connection beyond it is closed as soon as it is accepted (Node's `drop`
 * event, counted and logged here), so admitted connections keep being served.
 * Every connection gets TCP keep-alive (a vanished host is noticed by the
 * kernel), and every HTTP/2 session is PINGed and header-timed by
 * `session-upkeep.ts`. How an admitted connection reaches HTTP/1.1 or
 * HTTP/2 is the port's: sniffed on the plaintext port
 * (`connection-routing.ts`), by ALPN on the TLS port (`tls-port.ts`).
 */
import type { EventEmitter } from "node:events";
import type { Http2Session } from "node:http2";
import type { Server as NetServer, Socket } from "node:net";
import type { Logger } from "../../runtime/logger.js";
import type { Refusals } from "./refusals.js";
import type { ServerLimits } from "./server-limits.js";
import { createSessionUpkeep } from "./session-upkeep.js";

/** A connection's peer address and port, the same for its TLS socket and its session's. */
function peerKey(socket: Pick<Socket, "remoteAddress" | "remotePort"> | undefined): string {
  return `${socket?.remoteAddress}:${socket?.remotePort}`;
}

/** Options of {@link trackConnections}. */
export interface ConnectionTrackingOptions {
  /**
   * The limits applied here: `maxConnections`; `headerTimeoutMs` (how long an
   * HTTP/2 header block may take to finish, and the port's own first-bytes
   * deadline); `idleTimeoutMs` (how long an HTTP/2 session may go without
   * traffic before it is closed gracefully); the PING interval and timeout
   * (TCP keep-alive probes start after the PING interval too).
   */
  readonly limits: Pick<
    ServerLimits,
    | "maxConnections"
    | "maxOpenStreams"
    | "headerTimeoutMs"
    | "idleTimeoutMs"
    | "pingIntervalMs"
    | "pingTimeoutMs"
  >;
  /** Where refused connections and destroyed sessions are counted and logged. */
  readonly refusals: Refusals;
  /** Aborted when the server drains: new connections are refused, new sessions closed. */
  readonly drainSignal: AbortSignal;
  /** Where server and session errors are logged. */
  readonly logger: Logger;
}

/** The servers of one port. */
export interface PortServers {
  /** The server that listens: its connections are capped, counted and tracked. */
  readonly port: NetServer;
  /** The server whose HTTP/1.1 `clientError`s (header and request timeouts) are counted. */
  readonly http1: EventEmitter;
  /** The server whose HTTP/2 sessions are kept (`session` events). */
  readonly h2: EventEmitter;
}

/**
 * What the port does with an admitted connection (the plaintext port sniffs
 * it); `routed` is called once it is handed on or dropped. Until then,
 * draining destroys it.
 */
export type RouteConnection = (socket: Socket, routed: () => void) => void;

/** The connections a server holds, for draining. */
export interface TrackedConnections {
  /** Resolves once no connection is open (at once when none is). */
  allClosed(): Promise<void>;
  /** Drops the connections not yet routed and closes every HTTP/2 session gracefully. */
  closeGracefully(): void;
  /** Destroys every session and connection that is left, and stops PINGing. */
  destroyAll(): void;
  /** How many connections are open. */
  readonly size: number;
  /** How many HTTP/2 streams are open over all sessions. */
  readonly openStreams: number;
}

/**
 * Tracks the connections of `servers.port` and the sessions of
 * `servers.h2` (see the module comment), handing each admitted connection
 * to `route` when given. Call once, before listening.
 */
export function trackConnections(
  servers: PortServers,
  options: ConnectionTrackingOptions,
  route?: RouteConnection,
): TrackedConnections {
  const { logger, drainSignal, limits, refusals } = options;
  const { port, http1, h2 } = servers;
  const sockets = new Set<Socket>();
  // The accepted TCP socket of each peer address: what ends a session at once.
  const byPeer = new Map<string, Socket>();
  const upkeep = createSessionUpkeep({
    limits,
    refusals,
    logger,
    end: (session) => {
      const socket = byPeer.get(peerKey(session.socket));
      session.destroy();
      socket?.destroy();
    },
  });
  const unrouted = new Set<Socket>();
  const sessions = new Set<Http2Session>();
  let onAllClosed: (() => void) | undefined;

  port.maxConnections = limits.maxConnections;
  port.on("drop", (peer?: { remoteAddress?: string }) => {
    refusals.refuse("max_connections", {
      remoteAddress: peer?.remoteAddress,
      maxConnections: limits.maxConnections,
    });
  });
  port.on("connection", (socket: Socket) => {
    sockets.add(socket);
    const peer = peerKey(socket);
    byPeer.set(peer, socket);
    socket.once("close", () => {
      sockets.delete(socket);
      if (byPeer.get(peer) === socket) byPeer.delete(peer);
      if (sockets.size === 0) onAllClosed?.();
    });
    if (drainSignal.aborted) {
      socket.destroy();
      return;
    }
    if (limits.pingIntervalMs > 0) socket.setKeepAlive(true, limits.pingIntervalMs);
    if (route === undefined) return;
    unrouted.add(socket);
    route(socket, () => unrouted.delete(socket));
  });
  port.on("error", (error) => logger.error({ err: error }, "server error"));
  http1.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    // Node's headersTimeout and requestTimeout: fastify's own listener answers 408.
    if (error.code !== "ERR_HTTP_REQUEST_TIMEOUT") return;
    // Without a response in flight, the request's headers never finished.
    const inFlight = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
    refusals.refuse(inFlight === undefined ? "header_timeout" : "request_body_timeout", {
      remoteAddress: socket.remoteAddress,
    });
  });

  h2.on("session", (session: Http2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    session.on("error", (error) => logger.debug({ err: error }, "http2 session error"));
    session.setTimeout(limits.idleTimeoutMs, () => session.close());
    upkeep.track(session);
    if (drainSignal.aborted) session.close();
  });
  h2.on("sessionError", (error) => logger.debug({ err: error }, "http2 session error"));

  return {
    allClosed: () =>
      new Promise<void>((resolve) => {
        onAllClosed = resolve;
        if (sockets.size === 0) resolve();
      }),
    closeGracefully() {
      for (const socket of unrouted) socket.destroy();
      for (const session of sessions) session.close();
    },
    destroyAll() {
      upkeep.stop();
      for (const session of sessions) session.destroy();
      for (const socket of sockets) socket.destroy();
    },
    get size() {
      return sockets.size;
    },
    get openStreams() {
      return upkeep.openStreams;
    },
  };
}
