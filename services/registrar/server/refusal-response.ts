/**
 * The answer to a request the server refuses before any handler sees it (too
 * many unfinished request bodies), in the protocol the request speaks, so
 * that every client reads a status code and retry advice rather than a
 * broken response: gRPC gets headers and then trailers (`grpc-status`,
 * `grpc-message`, `grpc-retry-pushback-ms`), gRPC-Web the same in a trailer
 * frame, Connect streaming an end-stream message, and Connect unary (and
 * anything else) the Connect JSON error with its HTTP status; an answer
 * that advises a retry carries `retry-after` (and `grpc-retry-pushback-ms`).
 *
 * `grpc-message` is percent-encoded as the gRPC spec asks (only bytes
 * outside printable ASCII, and `%`), not by `encodeURIComponent` as
 * connect-es does: @grpc/grpc-js decodes it with `decodeURI`, which leaves
 * `%3A` and `%2F` alone, so a SPIFFE ID in a denial would reach its callers
 * as `spiffe%3A%2F%2F…`.
 *
 * Not a gRPC trailers-only response: Node resets the stream of a response
 * that ends on its HEADERS while the request is unread (RST_STREAM
 * NO_ERROR), and grpc-js then reports "Call ended without gRPC status"
 * instead of the status those headers carried.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { type Code, ConnectError } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  contentTypeStreamRegExp as connectStreamContentType,
  endStreamFlag,
  endStreamToJson,
  errorToJsonBytes,
} from "@connectrpc/connect/protocol-connect";
import {
  contentTypeRegExp as grpcContentType,
  setTrailerStatus,
} from "@connectrpc/connect/protocol-grpc";
import {
  contentTypeRegExp as grpcWebContentType,
  trailerFlag,
  trailerSerialize,
} from "@connectrpc/connect/protocol-grpc-web";
import { resetUnlessEnded } from "./stream-reset.js";

/** A complete HTTP response, ready to write. */
export interface RefusalResponse {
  /** The HTTP status. */
  readonly status: number;
  /** The response headers (lower-case names). */
  readonly headers: Readonly<Record<string, string>>;
  /** The body. */
  readonly body: Uint8Array;
  /**
   * gRPC: the status, sent as HTTP/2 trailers after the headers (over
   * HTTP/1.1, where gRPC has no trailers, as headers of a trailers-only
   * response).
   */
  readonly trailers?: Readonly<Record<string, string>>;
}

/** `text` percent-encoded as the gRPC spec's `grpc-message` (UTF-8; bytes outside 0x20-0x7E, and `%`). */
export function grpcPercentEncode(text: string): string {
  let encoded = "";
  for (const byte of Buffer.from(text, "utf8")) {
    encoded +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return encoded;
}

/**
 * The response that refuses a request whose `content-type` is `contentType`
 * with `code` and `message`, advising a retry after `retryAfterMs` (no
 * advice when it is 0). Pure.
 */
export function refusalResponse(
  contentType: string | undefined,
  code: Code,
  message: string,
  retryAfterMs: number,
): RefusalResponse {
  const error = new ConnectError(message, code);
  const advice: Record<string, string> =
    retryAfterMs > 0 ? { "retry-after": String(Math.ceil(retryAfterMs / 1000)) } : {};
  const type = contentType ?? "";
  const grpcStatus = setTrailerStatus(new Headers(), error);
  grpcStatus.set("grpc-message", grpcPercentEncode(message));
  if (retryAfterMs > 0) grpcStatus.set("grpc-retry-pushback-ms", String(retryAfterMs));
  const webMatch = grpcWebContentType.exec(type);
  if (webMatch !== null) {
    const frame = encodeEnvelope(trailerFlag, trailerSerialize(grpcStatus));
    return {
      status: 200,
      headers: { "content-type": type, ...advice },
      body:
        webMatch[1] === undefined
          ? frame
          : new TextEncoder().encode(Buffer.from(frame).toString("base64")),
    };
  }
  if (grpcContentType.test(type)) {
    return {
      status: 200,
      headers: { "content-type": type, ...advice },
      body: new Uint8Array(0),
      trailers: Object.fromEntries(grpcStatus.entries()),
    };
  }
  if (connectStreamContentType.test(type)) {
    const endStream = JSON.stringify(endStreamToJson(new Headers(), error, undefined));
    return {
      status: 200,
      headers: { "content-type": type, ...advice },
      body: encodeEnvelope(endStreamFlag, new TextEncoder().encode(endStream)),
    };
  }
  return {
    status: codeToHttpStatus(code),
    headers: { "content-type": "application/json", ...advice },
    body: errorToJsonBytes(error, undefined),
  };
}

/**
 * A ConnectError for a handler to fail with that carries the same retry
 * advice as {@link refusalResponse}: connect-es sends its metadata as
 * headers (Connect) or trailers (gRPC, gRPC-Web).
 */
export function retryableError(message: string, code: Code, retryAfterMs: number): ConnectError {
  return new ConnectError(message, code, {
    "retry-after": String(Math.ceil(retryAfterMs / 1000)),
    "grpc-retry-pushback-ms": String(retryAfterMs),
  });
}

/** How many distinct refusals are remembered; the memory is cleared when it is full. */
const KNOWN_REFUSALS = 256;
const known = new Map<string, RefusalResponse>();

/**
 * {@link refusalResponse}, remembered: a flood refuses thousands of requests
 * a second with a handful of distinct answers, and making one (an error with
 * its stack, its encodings) costs more than the rest of the refusal.
 */
function knownRefusal(
  contentType: string | undefined,
  code: Code,
  message: string,
  retryAfterMs: number,
): RefusalResponse {
  const key = `${contentType ?? ""}\u0000${code}\u0000${retryAfterMs}\u0000${message}`;
  let response = known.get(key);
  if (response === undefined) {
    if (known.size >= KNOWN_REFUSALS) known.clear();
    response = refusalResponse(contentType, code, message, retryAfterMs);
    known.set(key, response);
  }
  return response;
}

/**
 * Writes {@link refusalResponse} to `res` unless a response was started
 * already. An HTTP/1.1 response closes the connection unless the request's
 * body is small enough to let arrive and drop ({@link drainableBody}).
 */
export function sendRefusal(
  res: ServerResponse | Http2ServerResponse,
  contentType: string | undefined,
  code: Code,
  message: string,
  retryAfterMs: number,
): void {
  if (res.headersSent || res.writableEnded) return;
  const response = knownRefusal(contentType, code, message, retryAfterMs);
  if (res.req.httpVersionMajor >= 2) {
    res.writeHead(response.status, response.headers);
    if (response.trailers !== undefined) res.addTrailers(response.trailers);
    if (response.body.byteLength === 0) res.end();
    else res.end(response.body);
    return;
  }
  res.writeHead(response.status, {
    ...response.headers,
    ...response.trailers,
    ...(drainableBody(res.req.headers) ? {} : { connection: "close" }),
    "content-length": String(response.body.byteLength),
  });
  res.end(response.body);
}

/** The largest HTTP/1.1 request body a refusal lets arrive (and drops) instead of closing. */
export const DRAINED_BODY_BYTES = 64 * 1024;

/**
 * Whether an HTTP/1.1 request's unread body is small enough to let arrive
 * after a refusal: its `content-length` at most {@link DRAINED_BODY_BYTES},
 * and not chunked. Such a connection is kept open and Node drops the body
 * before the next request: a client still sending it would otherwise write
 * into a closed connection and report EPIPE instead of the refusal it was
 * sent. A larger or unknown body closes the connection. Pure.
 */
export function drainableBody(headers: {
  readonly "content-length"?: string | undefined;
  readonly "transfer-encoding"?: string | undefined;
}): boolean {
  if (headers["transfer-encoding"] !== undefined) return false;
  const length = headers["content-length"];
  if (length === undefined) return true;
  return /^\d+$/.test(length.trim()) && Number(length) <= DRAINED_BODY_BYTES;
}

/**
 * Refuses a request before its body is read: {@link sendRefusal}, then the
 * body is drained and the HTTP/2 stream reset unless the client ends it
 * within the grace ({@link resetUnlessEnded}), so a refused client holds
 * nothing.
 */
export function refuseRequest(
  req: IncomingMessage | Http2ServerRequest,
  res: ServerResponse | Http2ServerResponse,
  code: Code,
  message: string,
  retryAfterMs: number,
): void {
  sendRefusal(res, req.headers["content-type"], code, message, retryAfterMs);
  req.resume();
  resetUnlessEnded(req);
}
