/**
 * The one-port trick: the HTTP/1.1 server owns the port, and each new
 * connection is sniffed (see `protocol-sniff.ts`) and handed either to the
 * HTTP/1.1 server's own connection handling or to an HTTP/2 server that
 * never listens. Every connection and HTTP/2 session is tracked until it
 * closes, so that draining can close the idle ones, wait for the rest, and
 * destroy what is left when the grace period is over.
 *
 * The connection limit is the port-owning server's `maxConnections`: a
 * connection beyond it is closed as soon as it is accepted (Node's `drop`
 * event, counted and logged here), so admitted connections keep being served.
 * Every connection gets TCP keep-alive (a vanished host is noticed by the
 * kernel), and every HTTP/2 session is PINGed and header-timed by
 * `session-upkeep.ts`.
 */
import type { Server as Http1Server } from "node:http";
import type { Http2Server, Http2Session } from "node:http2";
import type { Socket } from "node:net";
import type { Logger } from "../../runtime/logger.js";
import { sniffProtocol } from "./protocol-sniff.js";
import type { Refusals } from "./refusals.js";
import type { ServerLimits } from "./server-limits.js";
import { createSessionUpkeep } from "./session-upkeep.js";

/** Options of {@link routeConnections}. */
export interface ConnectionRoutingOptions {
  /**
   * The limits applied here: `maxConnections`; `headerTimeoutMs` (how long a
   * new connection may take to send enough bytes to be sniffed, and an HTTP/2
   * header block to finish); `idleTimeoutMs` (how long an HTTP/2 session may
   * go without traffic before it is closed gracefully); the PING interval
   * and timeout (TCP keep-alive probes start after the PING interval too).
   */
  readonly limits: Pick<
    ServerLimits,
    "maxConnections" | "headerTimeoutMs" | "idleTimeoutMs" | "pingIntervalMs" | "pingTimeoutMs"
  >;
  /** Where refused connections and destroyed sessions are counted and logged. */
  readonly refusals: Refusals;
  /** Aborted when the server drains: new connections are refused, new sessions closed. */
  readonly drainSignal: AbortSignal;
  /** Where server and session errors are logged. */
  readonly logger: Logger;
}

/** The connections a server holds, for draining. */
export interface TrackedConnections {
  /** Resolves once no connection is open (at once when none is). */
  allClosed(): Promise<void>;
  /** Drops the connections still being sniffed and closes every HTTP/2 session gracefully. */
  closeGracefully(): void;
  /** Destroys every session and connection that is left, and stops PINGing. */
  destroyAll(): void;
  /** How many connections are open. */
  readonly size: number;
}

/**
 * Interposes on `http1`'s connection handling (see the module comment) and
 * tracks the connections and `h2`'s sessions. Call once, before listening.
 */
export function routeConnections(
  http1: Http1Server,
  h2: Http2Server,
  options: ConnectionRoutingOptions,
): TrackedConnections {
  const { logger, drainSignal, limits, refusals } = options;
  const upkeep = createSessionUpkeep({ limits, refusals, logger });
  const sockets = new Set<Socket>();
  const sniffing = new Set<Socket>();
  const sessions = new Set<Http2Session>();
  let onAllClosed: (() => void) | undefined;

  const http1ConnectionListeners = http1.listeners("connection") as ((socket: Socket) => void)[];
  http1.removeAllListeners("connection");
  http1.maxConnections = limits.maxConnections;
  http1.on("drop", (peer?: { remoteAddress?: string }) => {
    refusals.refuse("max_connections", {
      remoteAddress: peer?.remoteAddress,
      maxConnections: limits.maxConnections,
    });
  });
  http1.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      if (sockets.size === 0) onAllClosed?.();
    });
    if (drainSignal.aborted) {
      socket.destroy();
      return;
    }
    if (limits.pingIntervalMs > 0) socket.setKeepAlive(true, limits.pingIntervalMs);
    sniffing.add(socket);
    sniffProtocol(socket, limits.headerTimeoutMs, (protocol) => {
      sniffing.delete(socket);
      if (protocol === "h2c") {
        // The socket comes from the HTTP/1.1 server, which allows half-open
        // connections; HTTP/2 has no use for them, and a session whose peer
        // went away (FIN) would otherwise never close, nor its open streams end.
        socket.allowHalfOpen = false;
        h2.emit("connection", socket);
      } else if (protocol === "http/1.1") {
        for (const listener of http1ConnectionListeners) listener.call(http1, socket);
        socket.resume();
      }
    });
  });
  http1.on("error", (error) => logger.error({ err: error }, "server error"));
  http1.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    // Node's headersTimeout and requestTimeout: fastify's own listener answers 408.
    if (error.code !== "ERR_HTTP_REQUEST_TIMEOUT") return;
    // Without a response in flight, the request's headers never finished.
    const inFlight = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
    refusals.refuse(inFlight === undefined ? "header_timeout" : "request_body_timeout", {
      remoteAddress: socket.remoteAddress,
    });
  });

  h2.on("session", (session) => {
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
      for (const socket of sniffing) socket.destroy();
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
  };
}
