/**
 * The HTTP/1.1 server of `aetherctl dashboard`: every request's Host header
 * is checked first (DNS rebinding), then ConfigService calls, their Origin
 * checked too (cross-site calls), go to the gateway (`config-gateway.ts`,
 * served by connect-node: the Connect protocol in JSON and binary, and
 * gRPC-Web) or, for `/agents…`, to the agents' route tables
 * (`agent-proxy.ts`, the same Origin check), and everything else to the
 * console's static files
 * (`static-assets.ts`). Every response carries the headers of
 * `response-headers.ts`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { hostname, networkInterfaces } from "node:os";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { serveAgents } from "./agent-proxy.js";
import { type ConfigGatewayOptions, registerConfigGateway } from "./config-gateway.js";
import { isAgentsPath } from "./dashboard-agents.js";
import {
  allowedHosts,
  checkApiOrigin,
  checkHost,
  hostForUrl,
  isApiPath,
} from "./request-checks.js";
import { COMMON_HEADERS } from "./response-headers.js";
import { sendText, serveAsset } from "./static-assets.js";

/** The largest request message the gateway reads (the contract's requests are small). */
const READ_MAX_BYTES = 1024 * 1024;

/** What the dashboard serves and where, and how its gateway calls the registrar. */
export interface DashboardServerOptions extends ConfigGatewayOptions {
  /** The directory of the console's built assets. */
  readonly assetsDir: string;
  /** The address to listen on (IPv6 without brackets). */
  readonly host: string;
  /** The port to listen on; 0 picks a free one. */
  readonly port: number;
  /** The agents whose route tables `/agents/NAME/routes` reads, by name; none when absent. */
  readonly agents?: ReadonlyMap<string, string>;
}

/** The machine's own addresses and name, which a wildcard listen host also answers to. */
function wildcardNames(host: string): string[] {
  if (host !== "0.0.0.0" && host !== "::") return [];
  const addresses = Object.values(networkInterfaces()).flatMap((list) =>
    (list ?? []).map((entry) => entry.address),
  );
  return [hostname(), ...addresses];
}

/** A dashboard server. */
export interface DashboardServer {
  /** Starts listening; resolves with the URL to open, rejects when the address cannot be bound. */
  start(): Promise<string>;
  /** Stops: refuses new connections, ends open ones (and their upstream calls); idempotent. */
  close(): Promise<void>;
}

/** Creates the dashboard server; nothing listens until `start`. */
export function createDashboardServer(options: DashboardServerOptions): DashboardServer {
  const api = connectNodeAdapter({
    routes: (router) => registerConfigGateway(router, options),
    connect: true,
    grpcWeb: true,
    grpc: false,
    requireConnectProtocolHeader: true,
    readMaxBytes: READ_MAX_BYTES,
  });
  const agents = options.agents ?? new Map<string, string>();
  let allowed: ReadonlySet<string> = new Set();
  const handle = (request: IncomingMessage, response: ServerResponse): void => {
    for (const [name, value] of Object.entries(COMMON_HEADERS)) response.setHeader(name, value);
    const host = request.headers.host;
    const refusal = checkHost(host, allowed);
    if (refusal !== undefined) {
      sendText(response, refusal);
      return;
    }
    const target = request.url ?? "";
    if (isApiPath(target) || isAgentsPath(target)) {
      const crossSite = checkApiOrigin({
        host: host as string,
        origin: request.headers.origin,
        fetchSite: request.headers["sec-fetch-site"] as string | undefined,
      });
      if (crossSite !== undefined) sendText(response, crossSite);
      else if (isApiPath(target)) api(request, response);
      else void serveAgents(request, response, { agents, timeoutMs: options.timeoutMs });
      return;
    }
    serveAsset(request, response, options.assetsDir).catch(() => response.destroy());
  };
  const server = createServer(handle);
  let closed: Promise<void> | undefined;
  return {
    start() {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(options.port, options.host, () => {
          server.off("error", reject);
          const { port } = server.address() as AddressInfo;
          allowed = allowedHosts(options.host, port, wildcardNames(options.host));
          resolve(`http://${hostForUrl(options.host)}:${port}/`);
        });
      });
    },
    close() {
      closed ??= new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
