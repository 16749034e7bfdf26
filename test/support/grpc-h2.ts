/**
 * gRPC calls made by hand over `node:http2`, for tests that need what a
 * generated client hides: a request body that never ends, the exact status
 * headers, the stream's reset code, the server's SETTINGS.
 */
import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  connect,
  type Settings,
} from "node:http2";
import { grpcEnvelope } from "./raw-h2.js";

/** How a hand-made gRPC call ended. */
export interface GrpcOutcome {
  readonly status?: string;
  readonly message?: string;
  readonly trailers: Record<string, unknown>;
  readonly rstCode: number;
}

/** A hand-made gRPC call: its stream, and what it received so far. */
export interface GrpcCall {
  readonly stream: ClientHttp2Stream;
  /** Resolves with the response headers. */
  readonly headers: Promise<Record<string, string | string[] | undefined>>;
  /**
   * Resolves once the call is over: its `grpc-status` and `grpc-message`
   * (from the trailers, or the headers of a trailers-only response), the
   * trailers, and the stream's reset code.
   */
  readonly ended: Promise<GrpcOutcome>;
  /** How many response body bytes arrived so far. */
  readonly received: () => number;
}

/**
 * Opens an HTTP/2 session to `url` with the client `settings` (for example
 * a small `initialWindowSize`) and resolves once the server's SETTINGS arrived.
 */
export async function openSession(
  url: string,
  settings: Settings = {},
): Promise<ClientHttp2Session> {
  const session = connect(url, { settings });
  session.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    session.once("remoteSettings", () => resolve());
    session.once("error", reject);
  });
  return session;
}

/**
 * Starts a gRPC call of `path` on `session` with the extra request `headers`
 * and writes `body` (by default one empty request message); the request is
 * ended unless `end` is false.
 */
export function grpcCall(
  session: ClientHttp2Session,
  path: string,
  options: { body?: Buffer; end?: boolean; headers?: Record<string, string> } = {},
): GrpcCall {
  const stream = session.request({
    ":method": "POST",
    ":path": path,
    "content-type": "application/grpc",
    te: "trailers",
    ...options.headers,
  });
  stream.on("error", () => {});
  let received = 0;
  let status: string | undefined;
  let message: string | undefined;
  let trailers: Record<string, unknown> = {};
  const take = (headers: Record<string, unknown>) => {
    if (headers["grpc-status"] !== undefined) {
      status = String(headers["grpc-status"]);
      message = decodeURIComponent(String(headers["grpc-message"] ?? ""));
    }
  };
  const headers = new Promise<Record<string, string | string[] | undefined>>((resolve) =>
    stream.once("response", (h) => {
      take(h);
      resolve(h);
    }),
  );
  stream.on("trailers", (received: Record<string, unknown>) => {
    trailers = received;
    take(received);
  });
  stream.on("data", (chunk: Buffer) => {
    received += chunk.length;
  });
  const ended = new Promise<GrpcOutcome>((resolve) =>
    stream.once("close", () =>
      resolve({ status, message, trailers, rstCode: stream.rstCode ?? 0 }),
    ),
  );
  const body = options.body ?? grpcEnvelope(new Uint8Array(0));
  if (options.end ?? true) stream.end(body);
  else stream.write(body);
  return { stream, headers, ended, received: () => received };
}
