/**
 * Where the network front reports the work it refuses or cuts off to stay
 * within its limits: each refusal is counted in
 * `aether_config_server_refusals_total{reason}` and logged at warn, at most
 * once per reason per interval (the next line says how many were left out),
 * so that an attack shows in the logs without flooding them.
 */
import { Counter, type Registry } from "prom-client";
import type { Logger } from "../../runtime/logger.js";
import { createRateLimitedLog } from "../../runtime/rate-limited-log.js";

/** Why work was refused or cut off; the `reason` label of the refusals counter. */
export const REFUSAL_REASONS = [
  "max_connections",
  "max_pending_requests",
  "max_concurrent_calls",
  "max_pending_request_bytes",
  "request_body_timeout",
  "header_timeout",
  "ping_timeout",
  "max_open_streams",
  "max_watch_streams",
  "preempted_call",
] as const;

/** One of {@link REFUSAL_REASONS}. */
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** The log message of each reason. */
const MESSAGES: Record<RefusalReason, string> = {
  max_connections: "connection limit reached: closing new connections at once",
  max_pending_requests: "too many unfinished request bodies: refusing new requests",
  max_concurrent_calls: "too many calls being answered at once: refusing new calls",
  max_pending_request_bytes: "unfinished request bodies hold their memory budget: refusing",
  request_body_timeout: "a request body did not arrive in time: answered DEADLINE_EXCEEDED",
  header_timeout: "a header block did not finish in time: connection closed",
  ping_timeout: "an HTTP/2 peer did not answer a PING in time: session destroyed",
  max_open_streams:
    "HTTP/2 streams open over all connections at their limit: the connection holding the most was closed",
  max_watch_streams: "watch stream limit reached: refusing new WatchConfig streams",
  preempted_call:
    "calls being answered at their limit: the connection holding the most lost its oldest to a lighter one",
};

/** The name of the counter {@link createRefusals} registers. */
export const REFUSALS_METRIC = "aether_config_server_refusals_total";

/** Counts and logs refusals; see the module comment. */
export interface Refusals {
  /**
   * Counts one refusal for `reason` and logs it at warn with `details`
   * (rate-limited per reason). Never throws.
   */
  refuse(reason: RefusalReason, details?: Record<string, unknown>): void;
}

/** Options of {@link createRefusals}. */
export interface RefusalsOptions {
  /** The registry the counter is registered in. */
  readonly registry: Registry;
  /** Where refusals are logged. */
  readonly logger: Logger;
  /** The interval in which one line per reason is written (then a count); default 10000 ms. */
  readonly logIntervalMs?: number;
}

/**
 * Registers `aether_config_server_refusals_total` (every reason at 0) in
 * the registry and returns the {@link Refusals} that count into it.
 */
export function createRefusals(options: RefusalsOptions): Refusals {
  const log = createRateLimitedLog(options.logger, {
    intervalMs: options.logIntervalMs ?? 10_000,
    perInterval: 1,
  });
  const counter = new Counter({
    name: REFUSALS_METRIC,
    help: "Connections, requests and streams the server refused or cut off to stay within its limits, by reason.",
    labelNames: ["reason"],
    registers: [options.registry],
  });
  for (const reason of REFUSAL_REASONS) counter.inc({ reason }, 0);

  return {
    refuse(reason, details = {}) {
      counter.inc({ reason });
      log.warn(reason, { reason, ...details }, MESSAGES[reason]);
    },
  };
}
