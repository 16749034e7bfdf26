/**
 * The pure admission decisions of the network front: whether one more
 * connection, request or stream fits under its limit, which requests count
 * as unfinished bodies, and whether a body chunk fits the memory budget.
 * The shells (`connection-routing.ts`, `request-budget.ts`,
 * `watch-stream.ts`) keep the counts and do the I/O.
 */

/**
 * Whether one more fits when `inUse` are taken of `limit`: true while
 * `inUse < limit`.
 */
export function admitOneMore(inUse: number, limit: number): boolean {
  return inUse < limit;
}

/**
 * How a request uses the body budget:
 * - `bodiless`: it has no body (a GET, `/healthz`, a Connect GET), so it never waits for one;
 * - `request-stream`: its RPC streams requests (client or bidi streaming), so it is exempt;
 * - `unary-body`: its body is one request message that must arrive within the deadline.
 */
export type RequestKind = "bodiless" | "request-stream" | "unary-body";

/** What {@link classifyRequest} looks at. */
export interface RequestShape {
  /** 1 for HTTP/1.x, 2 for HTTP/2. */
  readonly httpVersionMajor: number;
  /** HTTP/2: whether the HEADERS frame ended the stream (no body follows). */
  readonly endAfterHeaders?: boolean;
  /** HTTP/1.1: the `content-length` header. */
  readonly contentLength?: string | undefined;
  /** HTTP/1.1: the `transfer-encoding` header. */
  readonly transferEncoding?: string | undefined;
  /** Whether the path is an RPC whose request is a stream (client or bidi streaming). */
  readonly streamingRequest: boolean;
}

/** Classifies a request by {@link RequestKind}. */
export function classifyRequest(shape: RequestShape): RequestKind {
  const hasBody =
    shape.httpVersionMajor >= 2
      ? shape.endAfterHeaders !== true
      : shape.transferEncoding !== undefined ||
        (shape.contentLength !== undefined && shape.contentLength.trim() !== "0");
  if (!hasBody) return "bodiless";
  return shape.streamingRequest ? "request-stream" : "unary-body";
}

/**
 * Whether a body chunk of `chunkBytes` fits when `heldBytes` of unfinished
 * bodies are held and at most `maxBytes` may be.
 */
export function admitBodyChunk(heldBytes: number, chunkBytes: number, maxBytes: number): boolean {
  return heldBytes + chunkBytes <= maxBytes;
}

/** How long to tell a refused client to wait before it retries, in milliseconds. */
export const RETRY_AFTER_MS = 1_000;
