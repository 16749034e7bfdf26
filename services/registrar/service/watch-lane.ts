/**
 * The WatchConfig lane: binary Connect and gRPC WatchConfig streams served
 * straight from the HTTP request, before connect-es sees them. A change to a
 * service that every agent watches goes to each of their streams as one
 * `write` of a frame made once (`watch-push.ts`), in the cache's publish
 * call, where connect-es would run each stream's own async pipeline
 * (serialize, envelope, an iterator hop per step) for every message: on two
 * cores that pipeline was a third of the registrar's CPU for a hot change to
 * 1,000 streams.
 *
 * The lane takes only the plain requests of the two protocols
 * (`watch-lane-protocol.ts`); connect-es serves the rest exactly as it did.
 * Both answer alike: the same messages, the same codes and error messages,
 * the same limits (the admission and body budget run before either; the
 * streams limit, backlog bound and drain are `watch-stream.ts`'s), and the
 * same `aether_config_rpcs_total`. The lane sends messages uncompressed:
 * compression is the client's to accept, never to require, and a watch
 * event (one projection) is below the 16 KiB connect-es would compress.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type WatchConfigRequest,
  WatchConfigRequestSchema,
} from "../../../gen/aether/registry/v1/config_service_pb.js";
import type { Logger } from "../../runtime/logger.js";
import { decodingError } from "../server/request-error-mapping.js";
import { toConnectError } from "./config-service.js";
import { checkWatchConfigRequest, type WatchQuery } from "./request-checks.js";
import {
  type LaneRequest,
  laneEnd,
  laneResponseHeaders,
  matchLaneRequest,
  readRequestMessage,
} from "./watch-lane-protocol.js";
import type { WatchSink } from "./watch-push.js";
import type { WatchStreams } from "./watch-stream.js";

type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

/** Options of {@link createWatchLane}. */
export interface WatchLaneOptions {
  /** The streams (shared with the connect-es handler: one limit, one fan-out). */
  readonly watches: WatchStreams;
  /** The largest request message accepted (`readMaxBytes`). */
  readonly maxBodyBytes: number;
  /** Aborted when the grace period of a shutdown is over: streams end UNAVAILABLE. */
  readonly shutdownSignal: AbortSignal;
  /** Where unexpected errors are logged. */
  readonly logger: Logger;
  /** Told of a request whose message did not decode. */
  readonly onUndecoded?: () => void;
  /** Told the code of each stream as it ends (`ok`, `InvalidArgument`, …). */
  readonly onEnd?: (code: string) => void;
}

/**
 * Creates the lane's request handler: it serves a WatchConfig request it
 * takes and returns true, or returns false, untouched, for connect-es.
 */
export function createWatchLane(
  options: WatchLaneOptions,
): (req: Request, res: Response) => boolean {
  // The open streams, for the one shutdown listener they share.
  const open = new Set<LaneSink>();
  options.shutdownSignal.addEventListener(
    "abort",
    () => {
      for (const sink of [...open]) sink.fail(SHUTTING_DOWN());
    },
    { once: true },
  );
  return (req, res) => {
    const lane = matchLaneRequest(req);
    if (lane === undefined) return false;
    const sink = new LaneSink(options, lane, res, open);
    if (options.shutdownSignal.aborted) sink.fail(SHUTTING_DOWN());
    else void serve(options, sink, req, res);
    return true;
  };
}

/** The error of the streams still open when the grace period of a shutdown is over. */
const SHUTTING_DOWN = () => new ConnectError("server is shutting down", Code.Unavailable);

/** Reads the whole request body; rejects with the budget's or the reader's failure. */
async function readBody(req: Request, maxBytes: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      throw new ConnectError(
        `the request body is over ${maxBytes} bytes, the most this server reads`,
        Code.ResourceExhausted,
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The checked query of a request body, or the error to end the stream with. */
function queryOf(
  body: Uint8Array,
  options: WatchLaneOptions,
): { query: WatchQuery } | { error: unknown } {
  const read = readRequestMessage(body, options.maxBodyBytes);
  let request: WatchConfigRequest;
  try {
    if (!read.ok) throw decodingError(read.reason);
    request = fromBinary(WatchConfigRequestSchema, read.message);
  } catch (error) {
    options.onUndecoded?.();
    const reason = error instanceof Error ? error.message : String(error);
    return { error: error instanceof ConnectError ? error : decodingError(reason, error) };
  }
  try {
    return { query: checkWatchConfigRequest(request) };
  } catch (error) {
    return { error };
  }
}

/** Reads the request, then attaches its stream to the watches; never rejects. */
async function serve(
  options: WatchLaneOptions,
  sink: LaneSink,
  req: Request,
  res: Response,
): Promise<void> {
  let body: Uint8Array;
  try {
    body = await readBody(req, options.maxBodyBytes + 5);
  } catch (error) {
    return sink.fail(error);
  }
  const checked = queryOf(body, options);
  if ("error" in checked) return sink.fail(checked.error);
  if (sink.ended) return;
  res.writeHead(200, laneResponseHeaders(sink.lane.contentType));
  // Headers now, not with the first message: a stream that waits for the cache is open already.
  if ("flushHeaders" in res) res.flushHeaders();
  sink.attached(options.watches.attach(checked.query, sink));
}

/**
 * One lane stream's response: what the pushed stream writes through, how it
 * ends in the stream's protocol, and what ends it from outside (the client
 * gone, its deadline, a shutdown). A class, not closures: a registrar holds
 * thousands of these, idle.
 */
class LaneSink implements WatchSink {
  ended = false;
  private close: (() => void) | undefined;
  private deadline: NodeJS.Timeout | undefined;
  // Both response types write alike; their union's overloads do not type-check as one.
  private readonly out: {
    write(chunk: Uint8Array, callback?: (error?: Error | null) => void): boolean;
  };

  constructor(
    private readonly options: WatchLaneOptions,
    readonly lane: LaneRequest,
    private readonly res: Response,
    private readonly open: Set<LaneSink>,
  ) {
    this.out = res as unknown as LaneSink["out"];
    open.add(this);
    if (lane.timeoutMs !== undefined) {
      this.deadline = setTimeout(() => this.expire(), lane.timeoutMs);
    }
  }

  /** The pushed stream is attached: `close` ends it when the client goes away. */
  attached(close: () => void): void {
    this.close = close;
    if (this.ended || this.res.destroyed) close();
    else this.res.once("close", close);
  }

  /** Ends the stream with `error` from outside the pushed stream, which is then closed. */
  fail(error: unknown): void {
    this.end(error);
    this.close?.();
  }

  send(frame: Uint8Array, written?: (error?: Error | null) => void): boolean {
    if (this.res.destroyed || this.res.writableEnded) {
      written?.(new Error("the stream is closed"));
      return true;
    }
    return this.out.write(frame, written);
  }

  onceDrain(listener: () => void): void {
    this.res.once("drain", listener);
  }

  end(error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.open.delete(this);
    clearTimeout(this.deadline);
    const failure = error === undefined ? undefined : toConnectError(error, this.options.logger);
    this.options.onEnd?.(failure === undefined ? "ok" : (Code[failure.code] ?? "unknown"));
    const res = this.res;
    if (res.destroyed || res.writableEnded) return;
    if (!res.headersSent) res.writeHead(200, laneResponseHeaders(this.lane.contentType));
    const end = laneEnd(this.lane.protocol, failure);
    if (end.kind === "frame") {
      res.end(end.frame);
    } else {
      res.addTrailers(end.trailers);
      res.end();
    }
  }

  private expire(): void {
    this.fail(
      new ConnectError(
        `the stream's deadline (${this.lane.timeoutMs} ms, set by the client) passed`,
        Code.DeadlineExceeded,
      ),
    );
  }
}
