/**
 * The plain operational routes every registrar serves: `/healthz` (the
 * process answers), `/readyz` (it can serve real data, `ready` or `ready,
 * degraded: <why>`; 503 with the reason otherwise, and while draining) and
 * `/metrics` (Prometheus text format).
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

/** Registers `/healthz`, `/readyz` and `/metrics` on `app`. */
export function registerAdminRoutes(app: App, options: AdminRoutesOptions): void {
  app.get("/healthz", async (_request, reply) => {
    return reply.type("text/plain; charset=utf-8").send("ok\n");
  });
  app.get("/readyz", async (_request, reply) => {
    const readiness = currentReadiness(options);
    reply.type("text/plain; charset=utf-8");
    if (readiness.ready) {
      return reply.send(
        readiness.degraded === undefined ? "ready\n" : `ready, degraded: ${readiness.degraded}\n`,
      );
    }
    return reply.code(503).send(`${readiness.reason ?? "not ready"}\n`);
  });
  app.get("/metrics", async (_request, reply) => {
    const body = await options.metricsRegistry.metrics();
    return reply.type(options.metricsRegistry.contentType).send(body);
  });
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
