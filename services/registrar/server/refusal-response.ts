/**
 * The answer to a request the server refuses before any handler sees it (too
 * many unfinished request bodies), in the protocol the request speaks, so
 * that every client reads a status code and retry advice rather than a
 * broken response: gRPC and gRPC-Web get a trailers-only response
 * (`grpc-status`, `grpc-message`, `grpc-retry-pushback-ms`), Connect
 * streaming an end-stream message, and Connect unary (and anything else) the
 * Connect JSON error with its HTTP status; every answer carries `retry-after`.
 */
import type { ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";
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
import { contentTypeRegExp as grpcWebContentType } from "@connectrpc/connect/protocol-grpc-web";

/** A complete HTTP response, ready to write. */
export interface RefusalResponse {
  /** The HTTP status. */
  readonly status: number;
  /** The response headers (lower-case names). */
  readonly headers: Readonly<Record<string, string>>;
  /** The body; empty for trailers-only responses. */
  readonly body: Uint8Array;
}

/**
 * The response that refuses a request whose `content-type` is `contentType`
 * with `code` and `message`, advising a retry after `retryAfterMs`. Pure.
 */
export function refusalResponse(
  contentType: string | undefined,
  code: Code,
  message: string,
  retryAfterMs: number,
): RefusalResponse {
  const error = new ConnectError(message, code);
  const retryAfter = String(Math.max(1, Math.ceil(retryAfterMs / 1000)));
  const type = contentType ?? "";
  if (grpcContentType.test(type) || grpcWebContentType.test(type)) {
    const headers: Record<string, string> = {
      "content-type": type,
      "retry-after": retryAfter,
      "grpc-retry-pushback-ms": String(retryAfterMs),
    };
    setTrailerStatus(new Headers(), error).forEach((value, key) => {
      headers[key] = value;
    });
    return { status: 200, headers, body: new Uint8Array(0) };
  }
  if (connectStreamContentType.test(type)) {
    const endStream = JSON.stringify(endStreamToJson(new Headers(), error, undefined));
    return {
      status: 200,
      headers: { "content-type": type, "retry-after": retryAfter },
      body: encodeEnvelope(endStreamFlag, new TextEncoder().encode(endStream)),
    };
  }
  return {
    status: codeToHttpStatus(code),
    headers: { "content-type": "application/json", "retry-after": retryAfter },
    body: errorToJsonBytes(error, undefined),
  };
}

/**
 * Writes {@link refusalResponse} to `res` unless a response was started
 * already. HTTP/1.1 responses close the connection (the request body was
 * not read, so the connection cannot carry another request).
 */
export function sendRefusal(
  res: ServerResponse | Http2ServerResponse,
  contentType: string | undefined,
  code: Code,
  message: string,
  retryAfterMs: number,
): void {
  if (res.headersSent || res.writableEnded) return;
  const response = refusalResponse(contentType, code, message, retryAfterMs);
  const headers: Record<string, string> = { ...response.headers };
  if (res.req.httpVersionMajor < 2) {
    headers.connection = "close";
    headers["content-length"] = String(response.body.byteLength);
  }
  res.writeHead(response.status, headers);
  // Without a body, HTTP/2 ends the stream on the HEADERS frame, as a
  // gRPC trailers-only response must.
  if (response.body.byteLength === 0) res.end();
  else res.end(response.body);
}
