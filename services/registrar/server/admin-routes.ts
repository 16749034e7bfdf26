/**
 * The plain operational routes every registrar serves: `/healthz` (the
 * process answers), `/readyz` (it can serve real data, `ready` or `ready,
 * degraded: <why>`; 503 with the reason otherwise, and while draining) and
 * `/metrics` (Prometheus text format). {@link adminResponse} decides the
 * answers; the main port registers them on its fastify app
 * ({@link registerAdminRoutes}) and the admin port (`admin-server.ts`)
 * serves them alone.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { FastifyInstance } from "fastify";
import type { Registry } from "prom-client";
import type { Logger } from "../../runtime/logger.js";
import type { Readiness } from "./create-http-server.js";

/** The fastify app of the registrar's server (HTTP/1.1 server type, pino logger). */
type App = FastifyInstance<Server, IncomingMessage, ServerResponse, Logger>;

/** What {@link registerAdminRoutes} serves. */
export interface AdminRoutesOptions {
  /** The readiness `/readyz` reports; an exception counts as not ready, with its message. */
  readonly readiness: () => Readiness;
  /** The registry `/metrics` serves. */
  readonly metricsRegistry: Registry;
  /** Aborted when the server drains: `/readyz` then answers 503 `draining`. */
  readonly drainSignal: AbortSignal;
}

/** The operational paths, in the order `--help` and the docs list them. */
export const ADMIN_PATHS = ["/healthz", "/readyz", "/metrics"] as const;

/** One answer of an operational route. */
export interface AdminResponse {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

const TEXT = "text/plain; charset=utf-8";

/**
 * The answer to `GET path`, or undefined when `path` (without its query) is
 * not an operational route.
 */
export async function adminResponse(
  path: string,
  options: AdminRoutesOptions,
): Promise<AdminResponse | undefined> {
  switch (path.split("?", 1)[0]) {
    case "/healthz":
      return { status: 200, contentType: TEXT, body: "ok\n" };
    case "/readyz": {
      const readiness = currentReadiness(options);
      if (!readiness.ready) {
        return { status: 503, contentType: TEXT, body: `${readiness.reason ?? "not ready"}\n` };
      }
      const body =
        readiness.degraded === undefined ? "ready\n" : `ready, degraded: ${readiness.degraded}\n`;
      return { status: 200, contentType: TEXT, body };
    }
    case "/metrics":
      return {
        status: 200,
        contentType: options.metricsRegistry.contentType,
        body: await options.metricsRegistry.metrics(),
      };
    default:
      return undefined;
  }
}

/** Registers `/healthz`, `/readyz` and `/metrics` on `app`. */
export function registerAdminRoutes(app: App, options: AdminRoutesOptions): void {
  for (const path of ADMIN_PATHS) {
    app.get(path, async (_request, reply) => {
      const answer = (await adminResponse(path, options)) as AdminResponse;
      return reply.code(answer.status).type(answer.contentType).send(answer.body);
    });
  }
}

/** The readiness to report now: draining wins; a throwing probe is not ready. */
function currentReadiness(options: AdminRoutesOptions): Readiness {
  if (options.drainSignal.aborted) return { ready: false, reason: "draining" };
  try {
    return options.readiness();
  } catch (error) {
    return { ready: false, reason: error instanceof Error ? error.message : String(error) };
  }
}
