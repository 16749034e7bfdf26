/**
 * The plain operational routes every registrar serves: `/healthz` (the
 * process answers), `/readyz` (it can serve real data, `ready` or `ready,
 * degraded: <why>`; 503 with the reason otherwise, and while draining) and
 * `/metrics` (Prometheus text format). {@link adminResponse} decides the
 * answers from its {@link AdminSources}; the main port registers them on
 * its fastify app ({@link registerAdminRoutes}) and the admin port
 * (`admin-server.ts`) serves them alone, from a worker thread whose
 * `/healthz` reports whether the main thread's event loop still turns.
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

/** Where {@link adminResponse} takes its answers from. */
export interface AdminSources {
  /** The readiness to report now (never throws: see {@link currentReadiness}). */
  readonly readiness: () => Readiness;
  /** The metrics exposition `/metrics` serves. */
  readonly metrics: () => Promise<MetricsText>;
  /** The `/healthz` answer; undefined: always `ok`. */
  readonly liveness?: () => AdminResponse;
}

/** A Prometheus exposition and its content type. */
export interface MetricsText {
  readonly contentType: string;
  readonly body: string;
}

/** The operational paths, in the order `--help` and the docs list them. */
export const ADMIN_PATHS = ["/healthz", "/readyz", "/metrics"] as const;

/** One answer of an operational route. */
export interface AdminResponse {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

/** The content type of every answer but `/metrics`. */
export const TEXT = "text/plain; charset=utf-8";

/** The `/healthz` answer of a process that answers at all. */
export const HEALTHY: AdminResponse = { status: 200, contentType: TEXT, body: "ok\n" };

/**
 * The answer to `GET path`, or undefined when `path` (without its query) is
 * not an operational route.
 */
export async function adminResponse(
  path: string,
  sources: AdminSources,
): Promise<AdminResponse | undefined> {
  switch (path.split("?", 1)[0]) {
    case "/healthz":
      return sources.liveness?.() ?? HEALTHY;
    case "/readyz":
      return readinessResponse(sources.readiness());
    case "/metrics":
      return { status: 200, ...(await sources.metrics()) };
    default:
      return undefined;
  }
}

/** The `/readyz` answer for `readiness`: 200 `ready` (with what degrades it), or 503 and why not. */
export function readinessResponse(readiness: Readiness): AdminResponse {
  if (!readiness.ready) {
    return { status: 503, contentType: TEXT, body: `${readiness.reason ?? "not ready"}\n` };
  }
  const body =
    readiness.degraded === undefined ? "ready\n" : `ready, degraded: ${readiness.degraded}\n`;
  return { status: 200, contentType: TEXT, body };
}

/** The sources of {@link adminResponse} for a server's own options. */
export function adminSources(options: AdminRoutesOptions): AdminSources {
  return {
    readiness: () => currentReadiness(options),
    metrics: async () => ({
      contentType: options.metricsRegistry.contentType,
      body: await options.metricsRegistry.metrics(),
    }),
  };
}

/** Registers `/healthz`, `/readyz` and `/metrics` on `app`. */
export function registerAdminRoutes(app: App, options: AdminRoutesOptions): void {
  const sources = adminSources(options);
  for (const path of ADMIN_PATHS) {
    app.get(path, async (_request, reply) => {
      const answer = (await adminResponse(path, sources)) as AdminResponse;
      return reply.code(answer.status).type(answer.contentType).send(answer.body);
    });
  }
}

/** The readiness to report now: draining wins; a throwing probe is not ready. */
function currentReadiness(options: {
  readonly readiness: () => Readiness;
  readonly drainSignal: AbortSignal;
}): Readiness {
  if (options.drainSignal.aborted) return { ready: false, reason: "draining" };
  try {
    return options.readiness();
  } catch (error) {
    return { ready: false, reason: error instanceof Error ? error.message : String(error) };
  }
}
