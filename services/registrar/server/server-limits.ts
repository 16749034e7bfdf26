/**
 * The limits of the registrar's network front: how many connections, streams
 * and unfinished requests it holds at once, how long each phase of a
 * connection or request may take, and how quickly a silent HTTP/2 peer is
 * dropped. Each has a production default here and a registrar flag
 * (`server-limit-flags.ts`). Work beyond a limit is refused early and
 * counted (`refusals.ts`); nothing is allowed to grow until the heap runs out.
 */

/** The limits `createHttpServer` enforces; see each field. */
export interface ServerLimits {
  /**
   * The most TCP connections open at once (`--max-connections`). One more
   * is closed as soon as it is accepted, before anything is read from it.
   */
  readonly maxConnections: number;
  /**
   * The most concurrent streams per HTTP/2 connection
   * (`--max-concurrent-streams`), advertised in the server's SETTINGS.
   * Clients queue beyond it; a stream a peer opens beyond it anyway is
   * refused (RST_STREAM REFUSED_STREAM, retried safely by gRPC clients).
   */
  readonly maxConcurrentStreams: number;
  /**
   * The most HTTP/2 streams open at once over all connections
   * (`--max-open-streams`). One more destroys the session holding the most
   * (`stream-shedding.ts`): a peer that does not read keeps every stream it
   * opened, refused ones included, until its session ends.
   */
  readonly maxOpenStreams: number;
  /**
   * The largest request header block in bytes (`--max-header-bytes`): the
   * HTTP/1.1 header size limit and HTTP/2's SETTINGS_MAX_HEADER_LIST_SIZE.
   */
  readonly maxHeaderBytes: number;
  /**
   * The memory an HTTP/2 session's own buffers (header tables, frames queued
   * for the socket) may use before it refuses new streams
   * (`--max-session-memory`; Node's `maxSessionMemory`, in whole megabytes
   * of 10^6 bytes, at least 1).
   */
  readonly maxSessionMemoryBytes: number;
  /**
   * How long a connection may take to send a complete request header block
   * (`--header-timeout`): a new connection's first bytes, an HTTP/1.1
   * request's headers, and an HTTP/2 header block (HEADERS and its
   * CONTINUATIONs) once started. The connection is closed when it is over.
   */
  readonly headerTimeoutMs: number;
  /**
   * How long an idle HTTP/1.1 keep-alive connection or an HTTP/2 session
   * without traffic is kept (`--idle-timeout`).
   */
  readonly idleTimeoutMs: number;
  /**
   * How long a request body may take to arrive completely once its headers
   * did (`--request-body-timeout`). A unary or server-streaming RPC whose
   * request is still incomplete then is answered DEADLINE_EXCEEDED and its
   * buffers are released. Client- and bidi-streaming RPCs (reflection) are
   * exempt: their request is a stream by design.
   */
  readonly requestBodyTimeoutMs: number;
  /**
   * The interval of the server's HTTP/2 PINGs on every session
   * (`--ping-interval`); 0 disables them.
   */
  readonly pingIntervalMs: number;
  /**
   * How long a PING may stay unanswered before its session is destroyed
   * (`--ping-timeout`): its streams end and their resources are released.
   */
  readonly pingTimeoutMs: number;
  /**
   * The largest request message (Connect/gRPC) or body (plain routes) in
   * bytes (`--max-request-bytes`); larger ones are refused with
   * RESOURCE_EXHAUSTED.
   */
  readonly maxBodyBytes: number;
  /**
   * The most requests whose body is still arriving, over all connections
   * (`--max-pending-requests`). One more is refused at once with
   * RESOURCE_EXHAUSTED and retry advice. Requests without a body (`/healthz`,
   * Connect GET) and request streams are not counted.
   */
  readonly maxPendingRequests: number;
  /**
   * The most bytes of unfinished request bodies held at once, over all
   * requests (`--max-pending-request-bytes`). A request whose next chunk
   * would go beyond it is answered RESOURCE_EXHAUSTED with retry advice.
   */
  readonly maxPendingRequestBytes: number;
  /**
   * The most unary calls being answered at once, from admission until their
   * response closes (`--max-concurrent-calls`). One more is refused at once
   * with RESOURCE_EXHAUSTED and retry advice (`call-admission.ts`).
   */
  readonly maxConcurrentCalls: number;
}

/** The production defaults of {@link ServerLimits}; the flags' defaults. */
export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  maxConnections: 4096,
  maxConcurrentStreams: 100,
  maxOpenStreams: 4096,
  maxHeaderBytes: 16 * 1024,
  maxSessionMemoryBytes: 10 * 1024 * 1024,
  headerTimeoutMs: 10_000,
  idleTimeoutMs: 72_000,
  requestBodyTimeoutMs: 10_000,
  pingIntervalMs: 30_000,
  pingTimeoutMs: 20_000,
  maxBodyBytes: 4 * 1024 * 1024,
  maxPendingRequests: 256,
  maxPendingRequestBytes: 32 * 1024 * 1024,
  maxConcurrentCalls: 512,
};

/** {@link DEFAULT_SERVER_LIMITS} with the given fields replaced. */
export function resolveServerLimits(limits: Partial<ServerLimits> = {}): ServerLimits {
  const resolved: { -readonly [K in keyof ServerLimits]: ServerLimits[K] } = {
    ...DEFAULT_SERVER_LIMITS,
  };
  for (const key of Object.keys(limits) as (keyof ServerLimits)[]) {
    const value = limits[key];
    if (value !== undefined) resolved[key] = value;
  }
  return resolved;
}
