/**
 * The registrar's network front: one TCP port that serves Connect (HTTP/1.1
 * and HTTP/2), gRPC and gRPC-Web through connect-fastify, plus the plain
 * operational routes `/healthz`, `/readyz` and `/metrics`.
 *
 * The port is plaintext (HTTP/1.1 and h2c, told apart by sniffing the
 * HTTP/2 preface) or, with {@link HttpServerOptions.tls}, TLS (ALPN
 * choosing `h2` or `http/1.1`, client X.509-SVIDs and `--authorize` when
 * configured): `server-port.ts` and `tls-port.ts`. Both call the same
 * fastify handler.
 *
 * Everything it holds is bounded by {@link ServerLimits} (`server-limits.ts`):
 * connections (`connection-tracking.ts`), streams per HTTP/2 connection (in
 * the server's SETTINGS), header sizes and timeouts, unfinished request
 * bodies (`request-budget.ts`), and silent HTTP/2 peers
 * (`session-upkeep.ts`). Refusals are counted in
 * `aether_config_server_refusals_total{reason}` and logged (`refusals.ts`).
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import { Code, ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import { fastify } from "fastify";
import type { Registry } from "prom-client";
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import { peerSpiffeId } from "../../runtime/tls/tls-server-guard.js";
import { registerAdminRoutes } from "./admin-routes.js";
import {
  boundedGzip,
  COMPRESS_MIN_BYTES,
  createPlaces,
  DEFAULT_COMPRESSION_CONCURRENCY,
} from "./bounded-compression.js";
import { createCallAdmission } from "./call-admission.js";
import type { ConnectionTrackingOptions } from "./connection-tracking.js";
import { createDirectRoutes, type DirectHandler } from "./direct-routes.js";
import { peerContextValues } from "./peer-identity.js";
import { createRefusals, type Refusals } from "./refusals.js";
import { createRequestBudget } from "./request-budget.js";
import {
  RequestDecodingErrorRouter,
  withRequestDecodingInterceptor,
} from "./request-error-mapping.js";
import { registerServerGauges } from "./server-gauges.js";
import { DEFAULT_SERVER_LIMITS, resolveServerLimits, type ServerLimits } from "./server-limits.js";
import {
  createPlainPort,
  type PortRequest,
  type PortResponse,
  type ServerPort,
} from "./server-port.js";
import { createTlsMetrics } from "./tls-metrics.js";
import { createTlsPort, type TlsPortOptions } from "./tls-port.js";

/** What a readiness probe reports: ready, or not ready and why. */
export interface Readiness {
  /** True when the process can serve its API with real data. */
  readonly ready: boolean;
  /** Why the process is not ready; shown in the `/readyz` body. */
  readonly reason?: string;
  /**
   * Ready, but serving something it would rather not (for example deletes
   * it holds): shown in the `/readyz` body after `ready`; the status stays 200.
   */
  readonly degraded?: string;
}

/** What {@link HttpServerOptions.routes} is given besides the router. */
export interface HttpServerRouteContext {
  /**
   * Aborted when the server starts draining. Long-lived stream handlers
   * should end their streams normally (status OK) when it aborts.
   */
  readonly drainSignal: AbortSignal;
  /**
   * Aborted when the grace period of a close is over: handlers still
   * running are cancelled (their clients get UNAVAILABLE).
   */
  readonly shutdownSignal: AbortSignal;
  /**
   * Lets `handler` take the requests of `path` before connect-es does, once
   * the port admitted them (authorization, body budget, call slots): it
   * returns true when it serves the request, false to leave it, untouched,
   * to connect-es. One handler per path; it must answer every request it
   * takes in the request's protocol and never throw.
   */
  serveDirect(path: string, handler: DirectHandler): void;
  /** The largest request body read, as connect-es's `readMaxBytes`. */
  readonly maxBodyBytes: number;
}

export type { DirectHandler } from "./direct-routes.js";

/** Options of {@link createHttpServer}. */
export interface HttpServerOptions {
  /**
   * Registers the Connect/gRPC/gRPC-Web services on the router. Called once,
   * when the server is first readied (by {@link HttpServer.listen}). A request
   * message that does not decode fails with InvalidArgument in every protocol
   * (see request-error-mapping.ts), and JSON request messages are parsed
   * strictly: an unknown field or enum name is InvalidArgument too.
   */
  readonly routes: (router: ConnectRouter, context: HttpServerRouteContext) => void;
  /**
   * The readiness `/readyz` reports. It is called on every probe and must
   * be cheap; an exception counts as not ready, with its message as reason.
   */
  readonly readiness: () => Readiness;
  /** The registry `/metrics` serves in the Prometheus text format. */
  readonly metricsRegistry: Registry;
  /** The logger; requests are logged at debug level. Silent by default. */
  readonly logger?: Logger;
  /** Interceptors applied to every RPC, outermost first. */
  readonly interceptors?: readonly Interceptor[];
  /**
   * Told the method name of each call whose request never reached its
   * implementation (a message that does not decode, or a request answered
   * before it was read), which the RPC's own metrics cannot count.
   */
  readonly onUndecodedRequest?: (method: string) => void;
  /**
   * The limits the server enforces; each field missing takes its default
   * from {@link DEFAULT_SERVER_LIMITS} (for example `maxBodyBytes` 4 MiB, and
   * `idleTimeoutMs` 72 s, longer than the usual 60 s of load balancers).
   */
  readonly limits?: Partial<ServerLimits>;
  /**
   * Where refusals are counted and logged; default a new one registered in
   * {@link HttpServerOptions.metricsRegistry}. Share one with the services
   * that refuse work of their own (WatchConfig's stream limit).
   */
  readonly refusals?: Refusals;
  /**
   * Serve TLS instead of plaintext (see `tls-port.ts`): the files are read
   * by {@link HttpServer.listen} and re-read when they change. The handshake
   * failures, denied calls and the serving certificate's expiry are
   * registered in {@link HttpServerOptions.metricsRegistry} (`tls-metrics.ts`).
   */
  readonly tls?: TlsPortOptions;
}

/** The address a server listens on. */
export interface ListenAddress {
  /** The bound address, for example `127.0.0.1` or `::`. */
  readonly host: string;
  /** The bound port (the real one when 0 was asked for). */
  readonly port: number;
  /** The base URL of the server, for example `http://127.0.0.1:8080` (`https://` over TLS). */
  readonly url: string;
}

/** Options of {@link HttpServer.close}. */
export interface HttpServerCloseOptions {
  /**
   * How long in-flight requests and streams may take to finish before the
   * remaining connections are destroyed. Default 10000 ms.
   */
  readonly graceMs?: number;
}

/** A server created by {@link createHttpServer}. */
export interface HttpServer {
  /**
   * Binds `host:port` (port 0 picks a free port) and starts serving. Rejects
   * when the address cannot be bound, when the TLS files are refused, when
   * already listening, or after {@link HttpServer.close}.
   */
  listen(host: string, port: number): Promise<ListenAddress>;
  /** The bound address while listening; undefined before and after. */
  readonly address: ListenAddress | undefined;
  /** Aborted when {@link HttpServer.close} starts draining. */
  readonly drainSignal: AbortSignal;
  /**
   * Stops accepting connections, aborts {@link HttpServer.drainSignal}, lets
   * in-flight requests and streams finish for up to `graceMs`, then aborts
   * the handlers still running (clients see UNAVAILABLE) and destroys every
   * remaining connection. Resolves when everything is closed; idempotent
   * (later calls return the same promise); works whether or not the server
   * ever listened.
   */
  close(options?: HttpServerCloseOptions): Promise<void>;
}

/** The default of {@link ServerLimits.maxBodyBytes}. */
export const DEFAULT_MAX_BODY_BYTES = DEFAULT_SERVER_LIMITS.maxBodyBytes;
/** The default of {@link HttpServerCloseOptions.graceMs}. */
export const DEFAULT_CLOSE_GRACE_MS = 10_000;

/** How long cancelled handlers get to send their error before connections are destroyed. */
const SHUTDOWN_FLUSH_MS = 100;

/** The base URL of a bound address (an IPv6 host in brackets), `http://` unless told. */
export function formatUrl(host: string, port: number, scheme: "http" | "https" = "http"): string {
  return `${scheme}://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** The pino level for fastify's own messages: warn, or the logger's level when higher. */
function fastifyLogLevel(logger: Logger): string {
  return logger.levelVal > (logger.levels.values.warn ?? 40) ? logger.level : "warn";
}

/**
 * Logs a request at debug when its response closes. While the server drains,
 * an HTTP/1.1 response asks for its connection to close, and `closeIdle` is
 * called once it is sent (its keep-alive connection becomes idle then).
 */
function followRequest(
  req: PortRequest,
  res: PortResponse,
  logger: Logger,
  drainSignal: AbortSignal,
  closeIdle: () => void,
): void {
  const started = performance.now();
  // The caller's SPIFFE ID over mutual TLS (absent on a plaintext port), read
  // while the stream is open (HTTP/2's socket proxy throws once it closed).
  const peer = logger.isLevelEnabled("debug") ? peerSpiffeId(req.socket)?.text : undefined;
  const http1Response = req.httpVersionMajor < 2 ? (res as ServerResponse) : undefined;
  if (http1Response !== undefined && drainSignal.aborted) {
    http1Response.setHeader("connection", "close");
  }
  res.once("close", () => {
    logger.debug(
      {
        method: req.method,
        url: req.url,
        httpVersion: req.httpVersion,
        status: res.statusCode,
        ms: Math.round(performance.now() - started),
        peer,
      },
      "request",
    );
    if (http1Response !== undefined && drainSignal.aborted) setImmediate(closeIdle);
  });
}

/** The request paths of the RPCs among `handlers` whose request is a stream (client or bidi streaming). */
function requestStreamPaths(handlers: readonly UniversalHandler[]): string[] {
  return handlers
    .filter(
      (h) => h.method.methodKind === "client_streaming" || h.method.methodKind === "bidi_streaming",
    )
    .map((h) => h.requestPath);
}

/**
 * Creates the registrar's HTTP server (see the module comment). Nothing is
 * bound until {@link HttpServer.listen}. Malformed input (garbage bytes,
 * wrong content types, oversized or truncated bodies, peers that vanish
 * mid-stream) is answered with an error or a dropped connection, never an
 * exception that escapes.
 */
export function createHttpServer(options: HttpServerOptions): HttpServer {
  const logger = (options.logger ?? createSilentLogger()).child({ component: "http-server" });
  const limits = resolveServerLimits(options.limits);
  const refusals =
    options.refusals ?? createRefusals({ registry: options.metricsRegistry, logger });
  /** The paths of the RPCs whose request is a stream, known once routes are registered. */
  const streamingRequestPaths = new Set<string>();
  /** The paths of the unary RPCs, known once routes are registered. */
  const unaryPaths = new Set<string>();
  const calls = createCallAdmission({
    maxConcurrentCalls: limits.maxConcurrentCalls,
    refusals,
    isUnaryCall: (path) => unaryPaths.has(path),
  });
  const budget = createRequestBudget({
    limits,
    refusals,
    isStreamingRequest: (path) => streamingRequestPaths.has(path),
  });

  /** Aborted when draining starts: streams end cleanly. */
  const drainController = new AbortController();
  /** Aborted when the grace period is over: handlers still running are cancelled. */
  const shutdownController = new AbortController();
  let address: ListenAddress | undefined;
  let closing: Promise<void> | undefined;
  let fastifyHandler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  /** The handlers that take requests before connect-es, by path (`serveDirect`). */
  const direct = createDirectRoutes();

  function onRequest(req: PortRequest, res: PortResponse): void {
    followRequest(req, res, logger, drainController.signal, () => port.closeIdle());
    // Who may call first: a denied peer holds no call slot and no body budget.
    if (!port.admit(req, res)) return;
    // The body budget next: a request refused there never holds a call slot.
    if (!budget.admit(req, res)) return;
    if (!calls.admit(req, res)) return;
    if (direct.serve(req, res)) return;
    // Fastify's handler serves both HTTP versions (it checks httpVersionMajor).
    fastifyHandler?.(req as IncomingMessage, res as ServerResponse);
  }
  const port = createPort(options, limits, onRequest, {
    limits,
    refusals,
    drainSignal: drainController.signal,
    logger,
  });

  const app = fastify({
    serverFactory: (handler) => {
      fastifyHandler = handler;
      return port.fastifyServer;
    },
    // Fastify logs each request at info; at warn only its errors get through
    // (requests are logged at debug by onRequest).
    loggerInstance: logger.child({}, { level: fastifyLogLevel(logger) }),
    bodyLimit: limits.maxBodyBytes,
    forceCloseConnections: false,
    return503OnClosing: false,
  });

  const compressions = createPlaces(DEFAULT_COMPRESSION_CONCURRENCY);
  registerServerGauges(options.metricsRegistry, {
    connections: () => port.connections.size,
    openStreams: () => port.connections.openStreams,
    pendingRequests: () => budget.pending,
    pendingRequestBytes: () => budget.pendingBytes,
    callsInFlight: () => calls.inFlight,
    compressionsWaiting: () => compressions.waiting,
  });
  registerAdminRoutes(app, {
    readiness: options.readiness,
    metricsRegistry: options.metricsRegistry,
    drainSignal: drainController.signal,
  });
  app.register(fastifyConnectPlugin, {
    routes: (router) => {
      const decodingRouter = new RequestDecodingErrorRouter(router, options.onUndecodedRequest);
      options.routes(decodingRouter, {
        drainSignal: drainController.signal,
        shutdownSignal: shutdownController.signal,
        maxBodyBytes: limits.maxBodyBytes,
        serveDirect: (path, handler) => direct.add(path, handler),
      });
      for (const path of requestStreamPaths(decodingRouter.handlers)) {
        streamingRequestPaths.add(path);
      }
      for (const handler of decodingRouter.handlers) {
        if (handler.method.methodKind === "unary") unaryPaths.add(handler.requestPath);
      }
    },
    readMaxBytes: limits.maxBodyBytes,
    // gzip only, a few at a time, and only messages worth it (see bounded-compression.ts).
    acceptCompression: [boundedGzip(compressions)],
    compressMinBytes: COMPRESS_MIN_BYTES,
    // Outermost: it maps the errors of request messages that do not decode.
    interceptors: withRequestDecodingInterceptor(options.interceptors, options.onUndecodedRequest),
    // Protobuf JSON, strictly: connect-es ignores unknown fields by default.
    jsonOptions: { ignoreUnknownFields: false },
    // The caller's verified SPIFFE ID, for handlers (TLS port with client certificates).
    contextValues: (req) => peerContextValues(req.raw.socket),
    shutdownSignal: shutdownController.signal,
  });

  async function drain(graceMs: number): Promise<void> {
    drainController.abort();
    const { connections } = port;
    const allClosed = connections.allClosed();
    if (port.listener.listening) port.listener.close();
    port.closeIdle();
    connections.closeGracefully();

    const graceOver = new AbortController();
    const closedInTime = await Promise.race([
      allClosed.then(() => true),
      delay(graceMs, false, { signal: graceOver.signal }).catch(() => false),
    ]);
    graceOver.abort();
    if (!closedInTime) {
      logger.warn(
        { connections: connections.size, graceMs },
        "grace period over: cancelling the requests still running",
      );
      shutdownController.abort(new ConnectError("server is shutting down", Code.Unavailable));
      // Let the cancelled handlers send their UNAVAILABLE before the connections go.
      await Promise.race([allClosed, delay(SHUTDOWN_FLUSH_MS, undefined, { ref: false })]);
      connections.destroyAll();
      await allClosed;
    }
    address = undefined;
    port.close();
    await app.close();
  }

  return {
    async listen(host, portNumber) {
      if (closing !== undefined) throw new Error("the server is closed");
      if (port.listener.listening) throw new Error("the server is already listening");
      await app.ready();
      await port.open();
      if (closing !== undefined) throw new Error("the server is closed");
      address = await bind(port, host, portNumber);
      logger.debug({ url: address.url }, "listening");
      return address;
    },
    get address() {
      return address;
    },
    drainSignal: drainController.signal,
    close(closeOptions = {}) {
      closing ??= drain(closeOptions.graceMs ?? DEFAULT_CLOSE_GRACE_MS);
      return closing;
    },
  };
}

/** The port `options` ask for: TLS with {@link HttpServerOptions.tls}, else plaintext. */
function createPort(
  options: HttpServerOptions,
  limits: ServerLimits,
  onRequest: (req: PortRequest, res: PortResponse) => void,
  tracking: ConnectionTrackingOptions,
): ServerPort {
  if (options.tls === undefined) return createPlainPort(limits, onRequest, tracking);
  const metrics = createTlsMetrics({
    registry: options.metricsRegistry,
    logger: tracking.logger.child({ part: "tls" }),
  });
  return createTlsPort(options.tls, { limits, onRequest, tracking, metrics });
}

/** Binds `port`'s listener to `host:portNumber`; resolves with the bound address. */
async function bind(port: ServerPort, host: string, portNumber: number): Promise<ListenAddress> {
  const { listener } = port;
  await new Promise<void>((resolve, reject) => {
    listener.once("error", reject);
    listener.listen({ host, port: portNumber }, () => {
      listener.off("error", reject);
      resolve();
    });
  });
  const bound = listener.address() as AddressInfo;
  return {
    host: bound.address,
    port: bound.port,
    url: formatUrl(bound.address, bound.port, port.scheme),
  };
}
