/**
 * The admin port (`--admin-listen`): plain HTTP/1.1 serving only `/healthz`,
 * `/readyz` and `/metrics` (`admin-routes.ts`), so kubelet probes and
 * Prometheus reach the registrar without going through the API port: they
 * need no client certificate once that port speaks mTLS, and they keep
 * answering while the API port is full (its `--max-connections` reached by
 * hostile or overloaded clients). It holds little: a few connections, short
 * header and request timeouts, no request bodies.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../../runtime/logger.js";
import { type AdminRoutesOptions, adminResponse } from "./admin-routes.js";
import { formatUrl, type ListenAddress } from "./create-http-server.js";

/** The most connections the admin port holds; probes and scrapers need a handful. */
export const ADMIN_MAX_CONNECTIONS = 64;
/** How long an admin request's headers may take. */
const ADMIN_HEADER_TIMEOUT_MS = 5_000;
/** How long an idle keep-alive connection to the admin port is kept. */
const ADMIN_KEEPALIVE_MS = 5_000;

/** Options of {@link createAdminServer}. */
export interface AdminServerOptions extends AdminRoutesOptions {
  /** Where server errors are logged. */
  readonly logger: Logger;
}

/** A started-on-demand admin server. */
export interface AdminServer {
  /** Binds `host:port` (0 picks a free port). */
  listen(host: string, port: number): Promise<ListenAddress>;
  /** The bound address once listening. */
  readonly address: ListenAddress | undefined;
  /** Stops accepting, and closes every connection (probes retry on their own). */
  close(): Promise<void>;
}

/** Creates the admin server; nothing is bound until {@link AdminServer.listen}. */
export function createAdminServer(options: AdminServerOptions): AdminServer {
  const logger = options.logger;
  const server = createServer(
    {
      headersTimeout: ADMIN_HEADER_TIMEOUT_MS,
      requestTimeout: ADMIN_HEADER_TIMEOUT_MS * 2,
      maxHeaderSize: 8 * 1024,
      connectionsCheckingInterval: 1_000,
    },
    (req, res) => void answer(req, res),
  );
  server.maxConnections = ADMIN_MAX_CONNECTIONS;
  server.keepAliveTimeout = ADMIN_KEEPALIVE_MS;
  server.on("error", (error) => logger.error({ err: error }, "admin server error"));
  server.on("clientError", (_error, socket) => socket.destroy());
  let address: ListenAddress | undefined;

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.on("error", () => undefined);
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" });
      res.end("only GET and HEAD\n");
      req.resume();
      return;
    }
    try {
      const found = await adminResponse(req.url ?? "/", options);
      const response = found ?? {
        status: 404,
        contentType: "text/plain; charset=utf-8",
        body: "not found: the admin port serves /healthz, /readyz and /metrics\n",
      };
      res.writeHead(response.status, {
        "content-type": response.contentType,
        "content-length": Buffer.byteLength(response.body),
        "cache-control": "no-store",
      });
      res.end(req.method === "HEAD" ? undefined : response.body);
    } catch (error) {
      logger.warn({ err: error, path: req.url }, "admin request failed");
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
      res.end("internal error\n");
    }
  }

  return {
    async listen(host, port) {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen({ host, port }, () => {
          server.off("error", reject);
          resolve();
        });
      });
      const bound = server.address() as AddressInfo;
      address = {
        host: bound.address,
        port: bound.port,
        url: formatUrl(bound.address, bound.port),
      };
      return address;
    },
    get address() {
      return address;
    },
    async close() {
      if (!server.listening) return;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      address = undefined;
    },
  };
}
