/**
 * The options of Node's HTTP/1.1 and HTTP/2 servers that carry the
 * registrar's {@link ServerLimits}. Pure: the servers are created in
 * `create-http-server.ts`.
 */
import type { ServerOptions as Http1ServerOptions } from "node:http";
import type { ServerOptions as Http2ServerOptions } from "node:http2";
import type { ServerLimits } from "./server-limits.js";

/** How often Node's HTTP/1.1 server looks for requests over their timeouts, at most. */
const MAX_CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

/**
 * The HTTP/1.1 server's options: the header size limit; `headersTimeout`
 * (the header timeout); `requestTimeout`, the header timeout plus the
 * request-body timeout, after which Node answers 408 and closes the
 * connection (the body deadline of `request-budget.ts` answers first; this
 * closes the connection of a body that never ends); and a check interval
 * fine enough for them (a quarter of the header timeout, at most 1 s).
 */
export function http1ServerOptions(
  limits: Pick<ServerLimits, "maxHeaderBytes" | "headerTimeoutMs" | "requestBodyTimeoutMs">,
): Http1ServerOptions {
  return {
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headerTimeoutMs,
    requestTimeout: limits.headerTimeoutMs + limits.requestBodyTimeoutMs,
    connectionsCheckingInterval: Math.max(
      1,
      Math.min(MAX_CONNECTIONS_CHECKING_INTERVAL_MS, Math.floor(limits.headerTimeoutMs / 4)),
    ),
  };
}

/**
 * The HTTP/2 server's options: SETTINGS_MAX_CONCURRENT_STREAMS and
 * SETTINGS_MAX_HEADER_LIST_SIZE advertised to every client, and
 * `maxSessionMemory` (whole megabytes of 10^6 bytes, at least 1).
 */
export function http2ServerOptions(
  limits: Pick<ServerLimits, "maxConcurrentStreams" | "maxHeaderBytes" | "maxSessionMemoryBytes">,
): Http2ServerOptions {
  return {
    settings: {
      maxConcurrentStreams: limits.maxConcurrentStreams,
      maxHeaderListSize: limits.maxHeaderBytes,
    },
    maxSessionMemory: Math.max(1, Math.round(limits.maxSessionMemoryBytes / 1_000_000)),
  };
}
