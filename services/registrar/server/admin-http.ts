/**
 * The admin port's HTTP server: plain HTTP/1.1 serving only `/healthz`,
 * `/readyz` and `/metrics` from {@link AdminSources}. It holds little: a few
 * connections, short header and request timeouts, no request bodies. It runs
 * in the admin worker (`admin-worker.ts`); nothing here touches the
 * registrar's state.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type AdminSources, adminResponse, TEXT } from "./admin-routes.js";

/** The most connections the admin port holds; probes and scrapers need a handful. */
export const ADMIN_MAX_CONNECTIONS = 64;
/** How long an admin request's headers may take. */
const ADMIN_HEADER_TIMEOUT_MS = 5_000;
/** How long an idle keep-alive connection to the admin port is kept. */
const ADMIN_KEEPALIVE_MS = 5_000;

/** Told about server errors and failed answers (what the main thread logs). */
export type AdminProblem = (problem: { msg: string; error: unknown; path?: string }) => void;

/** Creates the admin HTTP server (not listening). */
export function createAdminHttpServer(sources: AdminSources, problem: AdminProblem): Server {
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
  server.on("error", (error) => problem({ msg: "admin server error", error }));
  server.on("clientError", (_error, socket) => socket.destroy());

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.on("error", () => undefined);
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": TEXT });
      res.end("only GET and HEAD\n");
      req.resume();
      return;
    }
    try {
      const found = await adminResponse(req.url ?? "/", sources);
      const response = found ?? {
        status: 404,
        contentType: TEXT,
        body: "not found: the admin port serves /healthz, /readyz and /metrics\n",
      };
      res.writeHead(response.status, {
        "content-type": response.contentType,
        "content-length": Buffer.byteLength(response.body),
        "cache-control": "no-store",
      });
      res.end(req.method === "HEAD" ? undefined : response.body);
    } catch (error) {
      problem({ msg: "admin request failed", error, path: req.url });
      if (!res.headersSent) res.writeHead(503, { "content-type": TEXT });
      res.end(`${error instanceof Error ? error.message : String(error)}\n`);
    }
  }
  return server;
}
