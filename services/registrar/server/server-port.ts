/**
 * The servers that own the registrar's one port, behind one interface so
 * that `create-http-server.ts` serves, limits and drains either alike: the
 * plaintext port here (an HTTP/1.1 server that owns the port and hands the
 * connections that start with the HTTP/2 preface to an HTTP/2 server that
 * never listens), and the TLS port in `tls-port.ts` (one HTTP/2 secure
 * server, HTTP/1.1 allowed, ALPN choosing).
 */
import {
  createServer as createHttp1Server,
  type Server as Http1Server,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import {
  createServer as createHttp2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from "node:http2";
import type { Server as NetServer } from "node:net";
import { routeConnections } from "./connection-routing.js";
import type { ConnectionTrackingOptions, TrackedConnections } from "./connection-tracking.js";
import { http1ServerOptions, http2ServerOptions } from "./node-server-options.js";
import type { ServerLimits } from "./server-limits.js";

/** A request of either HTTP version. */
export type PortRequest = IncomingMessage | Http2ServerRequest;
/** A response of either HTTP version. */
export type PortResponse = ServerResponse | Http2ServerResponse;
/** What serves every request of the port. */
export type PortRequestHandler = (req: PortRequest, res: PortResponse) => void;

/** One port of the registrar; see the module comment. */
export interface ServerPort {
  /** The server that listens. */
  readonly listener: NetServer;
  /**
   * What fastify's `serverFactory` returns: the server whose HTTP/1.1
   * client errors fastify answers (typed as Node's HTTP/1.1 server).
   */
  readonly fastifyServer: Http1Server;
  /** The connections and sessions of the port, for the gauges and draining. */
  readonly connections: TrackedConnections;
  /** The scheme of the port's URL. */
  readonly scheme: "http" | "https";
  /** Readies what the port needs before it listens; rejects when it cannot serve. */
  open(): Promise<void>;
  /** Admits a request before anything reads it, or answers it and returns false. */
  admit(req: PortRequest, res: PortResponse): boolean;
  /** Closes the keep-alive HTTP/1.1 connections with no request in flight. */
  closeIdle(): void;
  /** Releases what {@link ServerPort.open} took; idempotent. */
  close(): void;
}

/** Creates the plaintext port (see the module comment); every request goes to `onRequest`. */
export function createPlainPort(
  limits: ServerLimits,
  onRequest: PortRequestHandler,
  tracking: ConnectionTrackingOptions,
): ServerPort {
  const http1 = createHttp1Server(http1ServerOptions(limits), onRequest);
  const h2 = createHttp2Server(http2ServerOptions(limits), onRequest);
  http1.keepAliveTimeout = limits.idleTimeoutMs;
  return {
    listener: http1,
    fastifyServer: http1,
    connections: routeConnections(http1, h2, tracking),
    scheme: "http",
    open: async () => {},
    admit: () => true,
    closeIdle: () => http1.closeIdleConnections(),
    close: () => {},
  };
}
