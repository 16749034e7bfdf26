/**
 * The plaintext port's one-port trick: the HTTP/1.1 server owns the port,
 * and each new connection is sniffed (see `protocol-sniff.ts`) and handed
 * either to the HTTP/1.1 server's own connection handling or to an HTTP/2
 * server that never listens. Connections and sessions are tracked, capped
 * and kept by `connection-tracking.ts`.
 */
import type { Server as Http1Server } from "node:http";
import type { Http2Server } from "node:http2";
import type { Socket } from "node:net";
import {
  type ConnectionTrackingOptions,
  type TrackedConnections,
  trackConnections,
} from "./connection-tracking.js";
import { sniffProtocol } from "./protocol-sniff.js";

/**
 * Interposes on `http1`'s connection handling (see the module comment) and
 * tracks the connections and `h2`'s sessions. `options.limits.headerTimeoutMs`
 * is also how long a new connection may take to send enough bytes to be
 * sniffed. Call once, before listening.
 */
export function routeConnections(
  http1: Http1Server,
  h2: Http2Server,
  options: ConnectionTrackingOptions,
): TrackedConnections {
  const http1ConnectionListeners = http1.listeners("connection") as ((socket: Socket) => void)[];
  http1.removeAllListeners("connection");
  return trackConnections({ port: http1, http1, h2 }, options, (socket, routed) => {
    sniffProtocol(socket, options.limits.headerTimeoutMs, (protocol) => {
      routed();
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
}
