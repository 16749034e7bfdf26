/**
 * The wire rules of the WatchConfig lane (`watch-lane.ts`): which requests
 * it takes, how it reads the request message and how it frames the response.
 * Pure: no I/O, no timers.
 *
 * The lane serves the binary Connect and gRPC streaming protocols, the two
 * that agents and gRPC clients speak, and only the plain case of each: an
 * uncompressed request message, a valid timeout or none, gRPC over HTTP/2.
 * Everything else (JSON, gRPC-Web, a compressed request, a malformed
 * timeout, an unknown protocol version) is left to connect-es, which
 * answers it as it always did, errors included.
 *
 * Both protocols frame messages alike: a flags byte (0: an uncompressed
 * message) and the message's length as a big-endian uint32, then the
 * message. So one framing of a change serves every stream of either
 * protocol. They differ at the end: Connect ends with one more frame (flag
 * 2, a JSON object holding the error, if any); gRPC with HTTP/2 trailers
 * (`grpc-status`, `grpc-message`).
 */
import type { ConnectError } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import {
  endStreamFlag,
  endStreamToJson,
  parseTimeout as parseConnectTimeout,
} from "@connectrpc/connect/protocol-connect";
import {
  parseTimeout as parseGrpcTimeout,
  setTrailerStatus,
} from "@connectrpc/connect/protocol-grpc";
import { grpcPercentEncode } from "../server/refusal-response.js";

/** The request path of WatchConfig. */
export const WATCH_CONFIG_PATH = "/aether.registry.v1.ConfigService/WatchConfig";

/** The protocols the lane serves. */
export type LaneProtocol = "connect" | "grpc";

/** What the lane needs of a request's head. */
export interface LaneRequestHead {
  /** The HTTP method. */
  readonly method?: string | undefined;
  /** The HTTP major version (1 or 2). */
  readonly httpVersionMajor: number;
  /** The request headers, lower-case names (as Node gives them). */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** A request the lane takes. */
export interface LaneRequest {
  /** Its protocol. */
  readonly protocol: LaneProtocol;
  /** The response's content type (the request's, as the protocols ask). */
  readonly contentType: string;
  /** The deadline the client asked for, in ms from now; undefined: none. */
  readonly timeoutMs: number | undefined;
}

/** One header's value as a string (the first of repeated ones). */
function header(head: LaneRequestHead, name: string): string | undefined {
  const value = head.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Whether a message-encoding header names no compression. */
function identity(encoding: string | undefined): boolean {
  return encoding === undefined || encoding.trim().toLowerCase() === "identity";
}

/**
 * Whether the lane takes a request (already known to be for
 * {@link WATCH_CONFIG_PATH}), and how; undefined leaves it to connect-es.
 * `maxTimeoutMs` bounds the deadlines accepted (connect-es's own check, so a
 * larger one is left to connect-es to refuse).
 */
export function matchLaneRequest(
  head: LaneRequestHead,
  maxTimeoutMs = Number.MAX_SAFE_INTEGER,
): LaneRequest | undefined {
  if (head.method !== "POST") return undefined;
  const contentType = (header(head, "content-type") ?? "").trim().toLowerCase();
  let protocol: LaneProtocol;
  let timeout: { timeoutMs?: number; error?: ConnectError };
  if (contentType === "application/connect+proto") {
    const version = header(head, "connect-protocol-version");
    if (version !== undefined && version !== "1") return undefined;
    if (!identity(header(head, "connect-content-encoding"))) return undefined;
    protocol = "connect";
    timeout = parseConnectTimeout(header(head, "connect-timeout-ms") ?? null, maxTimeoutMs);
  } else if (contentType === "application/grpc" || contentType === "application/grpc+proto") {
    if (head.httpVersionMajor < 2) return undefined;
    if (!identity(header(head, "grpc-encoding"))) return undefined;
    protocol = "grpc";
    timeout = parseGrpcTimeout(header(head, "grpc-timeout") ?? null, maxTimeoutMs);
  } else {
    return undefined;
  }
  if (timeout.error !== undefined) return undefined;
  return { protocol, contentType, timeoutMs: timeout.timeoutMs };
}

/** Frames one message as both protocols carry it (uncompressed). */
export function frameMessage(message: Uint8Array): Uint8Array {
  return encodeEnvelope(0, message);
}

/** What {@link readRequestMessage} makes of a request body. */
export type RequestMessage =
  | { readonly ok: true; readonly message: Uint8Array }
  | { readonly ok: false; readonly reason: string };

/**
 * The one message a server-streaming request carries, from its whole body:
 * exactly one uncompressed frame of at most `maxBytes`, nothing after it.
 */
export function readRequestMessage(body: Uint8Array, maxBytes: number): RequestMessage {
  if (body.byteLength < 5) {
    return { ok: false, reason: `the request body holds ${body.byteLength} bytes, not a message` };
  }
  const flags = body[0] as number;
  const length = new DataView(body.buffer, body.byteOffset, body.byteLength).getUint32(1);
  if ((flags & 1) === 1) {
    // As connect-es words it: the request names no compression, yet its frame says compressed.
    return { ok: false, reason: "received compressed envelope, but do not know how to decompress" };
  }
  if (flags !== 0) {
    return { ok: false, reason: `the request message has flags ${flags}, expected 0` };
  }
  if (length > maxBytes) {
    return { ok: false, reason: `the request message of ${length} bytes is over ${maxBytes}` };
  }
  if (body.byteLength !== 5 + length) {
    return {
      ok: false,
      reason: `the request body holds ${body.byteLength - 5} bytes after its frame header, which announces ${length}`,
    };
  }
  return { ok: true, message: body.subarray(5) };
}

/** The end of a stream in one protocol. */
export type LaneEnd =
  | { readonly kind: "frame"; readonly frame: Uint8Array }
  | { readonly kind: "trailers"; readonly trailers: Readonly<Record<string, string>> };

/**
 * How a stream of `protocol` ends: OK when `error` is undefined, else with
 * the error's code, message and metadata (retry advice, for example).
 */
export function laneEnd(protocol: LaneProtocol, error: ConnectError | undefined): LaneEnd {
  if (protocol === "connect") {
    // endStreamToJson adds the error's metadata (retry advice) itself.
    const json = JSON.stringify(endStreamToJson(new Headers(), error, undefined));
    return { kind: "frame", frame: encodeEnvelope(endStreamFlag, new TextEncoder().encode(json)) };
  }
  const trailers = setTrailerStatus(new Headers(), error);
  if (error !== undefined) {
    trailers.set("grpc-message", grpcPercentEncode(error.rawMessage));
    error.metadata.forEach((value, name) => {
      trailers.set(name, value);
    });
  }
  return { kind: "trailers", trailers: Object.fromEntries(trailers.entries()) };
}

/** The response headers of a lane stream whose request had `contentType`. */
export function laneResponseHeaders(contentType: string): Record<string, string> {
  return { "content-type": contentType };
}
