/**
 * The agent's local HTTP endpoints, read-only, plain HTTP/1.1: `GET /routes`
 * (the merged route table as JSON, with an ETag so pollers can ask "has it
 * changed?" cheaply) for the node's data plane, and `/healthz`, `/readyz`
 * and `/metrics` for the kubelet and Prometheus. They can be one endpoint
 * (`all`, the default) or two: the route table on a Unix socket or a
 * host-local address that only the node's data plane reaches (`routes`),
 * and the rest on the pod's address (`admin`), so that nothing else on the
 * network can read what a node routes.
 */
import { createHash } from "node:crypto";
import { chmod, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { createSilentLogger, type Logger } from "../../services/runtime/logger.js";

/** What `/readyz` reports. */
export interface AgentReadiness {
  /** True once the agent serves a route table (from its cache or its registrar). */
  readonly ready: boolean;
  /** Why it is not ready. */
  readonly reason?: string;
  /**
   * Ready, but serving something it would rather not (held projections):
   * shown in the `/readyz` body after `ready`; the status stays 200.
   */
  readonly degraded?: string;
}

/** Options of {@link createAgentHttpServer}. */
export interface AgentHttpServerOptions {
  /** The route table as the JSON text to serve, or undefined while there is none. */
  readonly routes: () => string | undefined;
  /** The readiness `/readyz` reports. */
  readonly readiness: () => AgentReadiness;
  /** The registry `/metrics` serves. */
  readonly metricsRegistry: Registry;
  /** Logger; requests are logged at debug level. Silent by default. */
  readonly logger?: Logger;
  /**
   * What this endpoint serves: everything (`all`, default), only `/routes`
   * (`routes`), or everything but `/routes` (`admin`). A path it does not
   * serve answers 404.
   */
  readonly serves?: "all" | "routes" | "admin";
}

/** Where an endpoint listens: a TCP address, or a Unix socket path. */
export type AgentListenTarget =
  | { readonly host: string; readonly port: number }
  | { readonly path: string };

/** The bound address of the endpoint. */
export interface AgentHttpAddress {
  /** The bound host ("" on a Unix socket). */
  readonly host: string;
  /** The bound port (the real one when 0 was asked for; 0 on a Unix socket). */
  readonly port: number;
  /**
   * The base URL, for example `http://127.0.0.1:8081`, or `unix:PATH` on a
   * Unix socket (`curl --unix-socket PATH http://agent/routes`).
   */
  readonly url: string;
  /** The Unix socket's path; undefined on TCP. */
  readonly socketPath?: string;
}

/** The endpoint; see {@link createAgentHttpServer}. */
export interface AgentHttpServer {
  /**
   * Binds `host:port` (0 picks a free port), or a Unix socket at `path`
   * (a stale socket file there is replaced; the socket is made readable and
   * writable by the agent's user and group only, 0660), and serves.
   */
  listen(target: AgentListenTarget): Promise<AgentHttpAddress>;
  /** Stops serving and closes every connection. Idempotent. */
  close(): Promise<void>;
}

function send(
  response: ServerResponse,
  status: number,
  type: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, {
    "content-type": type,
    "content-length": Buffer.byteLength(body),
    "cache-control": "no-store",
    ...headers,
  });
  response.end(response.req.method === "HEAD" ? undefined : body);
}

const TEXT = "text/plain; charset=utf-8";

/** Creates the endpoint; nothing is bound until `listen`. */
export function createAgentHttpServer(options: AgentHttpServerOptions): AgentHttpServer {
  const logger = options.logger ?? createSilentLogger();
  const serves = options.serves ?? "all";

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const path = (request.url ?? "/").split("?")[0] ?? "/";
    if (request.method !== "GET" && request.method !== "HEAD") {
      send(response, 405, TEXT, "only GET and HEAD are served\n", { allow: "GET, HEAD" });
      return;
    }
    if ((path === "/routes") !== (serves === "routes") && serves !== "all") {
      send(response, 404, TEXT, `no such endpoint here: ${path}\n`);
      return;
    }
    switch (path) {
      case "/healthz":
        send(response, 200, TEXT, "ok\n");
        return;
      case "/readyz": {
        const readiness = options.readiness();
        if (readiness.ready) {
          const body =
            readiness.degraded === undefined ? "ready" : `ready, degraded: ${readiness.degraded}`;
          send(response, 200, TEXT, `${body}\n`);
        } else send(response, 503, TEXT, `${readiness.reason ?? "not ready"}\n`);
        return;
      }
      case "/metrics": {
        const body = await options.metricsRegistry.metrics();
        send(response, 200, options.metricsRegistry.contentType, body);
        return;
      }
      case "/routes": {
        const body = options.routes();
        if (body === undefined) {
          send(
            response,
            503,
            TEXT,
            "no route table yet (no cache, and no answer from the registrar)\n",
          );
          return;
        }
        const etag = `"${createHash("sha256").update(body).digest("hex").slice(0, 32)}"`;
        if (request.headers["if-none-match"] === etag) {
          response.writeHead(304, { etag, "cache-control": "no-store" });
          response.end();
          return;
        }
        send(response, 200, "application/json", body, { etag });
        return;
      }
      default:
        send(response, 404, TEXT, `no such endpoint: ${path}\n`);
    }
  };

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      logger.error({ err: error, url: request.url }, "request failed");
      if (!response.headersSent) send(response, 500, TEXT, "internal error\n");
      else response.destroy();
    });
    response.once("finish", () =>
      logger.debug(
        { method: request.method, url: request.url, status: response.statusCode },
        "request",
      ),
    );
  });
  let closing: Promise<void> | undefined;
  let socketPath: string | undefined;

  return {
    async listen(target) {
      if ("path" in target) {
        // A socket file left by an agent that did not stop cleanly.
        await rm(target.path, { force: true });
        socketPath = target.path;
      }
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen("path" in target ? { path: target.path } : target, () => {
          server.off("error", reject);
          resolve();
        });
      });
      if ("path" in target) {
        await chmod(target.path, 0o660);
        return { host: "", port: 0, url: `unix:${target.path}`, socketPath: target.path };
      }
      const bound = server.address() as AddressInfo;
      const shown = bound.address.includes(":") ? `[${bound.address}]` : bound.address;
      return { host: bound.address, port: bound.port, url: `http://${shown}:${bound.port}` };
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        if (!server.listening) {
          resolve();
          return;
        }
        server.close(() => resolve());
        server.closeAllConnections();
      }).then(async () => {
        if (socketPath !== undefined) await rm(socketPath, { force: true });
      });
      return closing;
    },
  };
}
