/**
 * The registrar's flags for the limits of its network front
 * (`server/server-limits.ts`) and of WatchConfig streams: their `parseArgs`
 * options, their `--help` lines and their parsing into checked values.
 * Every default is a production default (see `deploy/README.md`).
 */
import { parseByteSizeFlag, parseCountFlag, parseDurationFlag } from "../process/flag-values.js";
import { UsageError } from "../process/usage-error.js";
import type { ServerLimits } from "./server/server-limits.js";

/** The limits the flags set. */
export interface RegistrarLimits {
  /** The network front's limits. */
  readonly serverLimits: ServerLimits;
  /** `--max-watch-streams`: the most WatchConfig streams open at once. */
  readonly maxWatchStreams: number;
  /** `--max-watch-backlog`: the most events a watch stream may have unsent. */
  readonly maxWatchBacklog: number;
}

/** The `parseArgs` options of the limit flags, with their defaults. */
export const LIMIT_FLAG_OPTIONS = {
  "max-connections": { type: "string", default: "4096" },
  "max-concurrent-streams": { type: "string", default: "100" },
  "max-open-streams": { type: "string", default: "4096" },
  "max-header-bytes": { type: "string", default: "16KiB" },
  "max-session-memory": { type: "string", default: "10MiB" },
  "header-timeout": { type: "string", default: "10s" },
  "idle-timeout": { type: "string", default: "72s" },
  "request-body-timeout": { type: "string", default: "10s" },
  "ping-interval": { type: "string", default: "30s" },
  "ping-timeout": { type: "string", default: "20s" },
  "max-request-bytes": { type: "string", default: "4MiB" },
  "max-pending-requests": { type: "string", default: "256" },
  "max-pending-request-bytes": { type: "string", default: "32MiB" },
  "max-concurrent-calls": { type: "string", default: "512" },
  "max-watch-streams": { type: "string", default: "2000" },
  "max-watch-backlog": { type: "string", default: "50000" },
} as const;

/** The `--help` lines of the limit flags. */
export const LIMIT_FLAGS_USAGE = `Limits (work beyond one is refused early, counted in
aether_config_server_refusals_total{reason} and logged):
  --max-connections N       TCP connections open at once; more are closed when accepted
                            (default 4096)
  --max-concurrent-streams N
                            streams per HTTP/2 connection, advertised in SETTINGS (default 100)
  --max-open-streams N      HTTP/2 streams open at once over all connections; one more
                            closes the connection holding the most (default 4096)
  --max-header-bytes SIZE   largest request header block (default 16KiB)
  --max-session-memory SIZE memory of one HTTP/2 session's buffers before it refuses new
                            streams, in whole MB (default 10MiB)
  --header-timeout DURATION time to send a complete header block, and a new connection its
                            first bytes (default 10s)
  --idle-timeout DURATION   how long an idle keep-alive connection or HTTP/2 session is kept
                            (default 72s)
  --request-body-timeout DURATION
                            time for a request body to arrive once its headers did; then
                            DEADLINE_EXCEEDED (default 10s; request streams are exempt)
  --ping-interval DURATION  HTTP/2 PING interval on every session; 0: none (default 30s)
  --ping-timeout DURATION   a session whose PING is unanswered this long is destroyed
                            (default 20s)
  --max-request-bytes SIZE  largest request message (default 4MiB)
  --max-pending-requests N  requests waiting for their body at once; more get
                            RESOURCE_EXHAUSTED (default 256)
  --max-pending-request-bytes SIZE
                            bytes those unfinished bodies may hold together (default 32MiB)
  --max-concurrent-calls N  unary calls (lists, status, health checks) answered at once,
                            until their response is written; more get RESOURCE_EXHAUSTED
                            with retry advice (default 512); shared fairly: at the
                            limit a connection with none in flight takes the oldest
                            place of the connection with the most (if two or more)
  --max-watch-streams N     WatchConfig streams open at once; more get RESOURCE_EXHAUSTED
                            (default 2000)
  --max-watch-backlog N     events a watch stream may have unsent before it is ended with
                            RESOURCE_EXHAUSTED (the client resumes; default 50000)
`;

/** The values `parseArgs` returned for the limit flags. */
type LimitFlagValues = Record<keyof typeof LIMIT_FLAG_OPTIONS, string>;

/** The least of the timeouts, in milliseconds. */
const MIN_TIMEOUT_MS = 100;

/**
 * Parses and checks the limit flags (as `parseArgs` returned them, defaults
 * applied). Throws a {@link UsageError} naming the flag when one is not a
 * number, size or duration, is below its minimum, or when
 * `--max-pending-request-bytes` could not hold one `--max-request-bytes` body.
 */
export function parseLimitFlags(values: Record<string, unknown>): RegistrarLimits {
  const v = values as LimitFlagValues;
  const duration = (flag: keyof LimitFlagValues, min = MIN_TIMEOUT_MS) =>
    parseDurationFlag(flag, v[flag], min);
  const pingIntervalMs = parseDurationFlag("ping-interval", v["ping-interval"]);
  if (pingIntervalMs !== 0 && pingIntervalMs < MIN_TIMEOUT_MS) {
    throw new UsageError(`--ping-interval must be 0 (no PINGs) or at least ${MIN_TIMEOUT_MS}ms`);
  }
  const serverLimits: ServerLimits = {
    maxConnections: parseCountFlag("max-connections", v["max-connections"]),
    maxConcurrentStreams: parseCountFlag("max-concurrent-streams", v["max-concurrent-streams"]),
    maxOpenStreams: parseCountFlag("max-open-streams", v["max-open-streams"]),
    maxHeaderBytes: parseByteSizeFlag("max-header-bytes", v["max-header-bytes"], 1024),
    maxSessionMemoryBytes: parseByteSizeFlag(
      "max-session-memory",
      v["max-session-memory"],
      1_000_000,
    ),
    headerTimeoutMs: duration("header-timeout"),
    idleTimeoutMs: duration("idle-timeout"),
    requestBodyTimeoutMs: duration("request-body-timeout"),
    pingIntervalMs,
    pingTimeoutMs: duration("ping-timeout"),
    maxBodyBytes: parseByteSizeFlag("max-request-bytes", v["max-request-bytes"], 1024),
    maxPendingRequests: parseCountFlag("max-pending-requests", v["max-pending-requests"]),
    maxPendingRequestBytes: parseByteSizeFlag(
      "max-pending-request-bytes",
      v["max-pending-request-bytes"],
    ),
    maxConcurrentCalls: parseCountFlag("max-concurrent-calls", v["max-concurrent-calls"]),
  };
  if (serverLimits.maxPendingRequestBytes < serverLimits.maxBodyBytes) {
    throw new UsageError(
      "--max-pending-request-bytes must be at least --max-request-bytes (or no request of the largest size could be read)",
    );
  }
  return {
    serverLimits,
    maxWatchStreams: parseCountFlag("max-watch-streams", v["max-watch-streams"]),
    maxWatchBacklog: parseCountFlag("max-watch-backlog", v["max-watch-backlog"]),
  };
}
