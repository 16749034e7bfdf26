/**
 * The budget of unfinished request bodies: how many requests may be waiting
 * for their body at once, how many bytes those bodies may hold together,
 * and how long each may take to arrive. A request beyond the count is
 * answered RESOURCE_EXHAUSTED at once (`refusal-response.ts`), before any
 * handler sees it; a body that would go beyond the bytes, or that is still
 * incomplete at its deadline, fails the read of the request inside
 * connect-es, which answers the client in its protocol (RESOURCE_EXHAUSTED
 * or DEADLINE_EXCEEDED). Once the response is sent, an HTTP/2 stream whose
 * request is still open is closed (RST_STREAM NO_ERROR, RFC 9113 section
 * 8.1), so nothing of it is held any longer; an HTTP/1.1 connection is
 * closed by Node's `requestTimeout` (see `create-http-server.ts`).
 *
 * connect-es (2.1.2) reads a request body by async iteration of the Node
 * request (`universalRequestFromNodeRequest`), so the budget is enforced by
 * replacing that request's async iterator with a metered one.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Http2ServerRequest, type Http2ServerResponse, constants as http2 } from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  admitBodyChunk,
  admitOneMore,
  classifyRequest,
  RETRY_AFTER_MS,
} from "./admission-rules.js";
import { sendRefusal } from "./refusal-response.js";
import type { Refusals } from "./refusals.js";
import type { ServerLimits } from "./server-limits.js";

/** Options of {@link createRequestBudget}. */
export interface RequestBudgetOptions {
  /** The limits enforced. */
  readonly limits: Pick<
    ServerLimits,
    "maxPendingRequests" | "maxPendingRequestBytes" | "requestBodyTimeoutMs"
  >;
  /** Where refusals are counted and logged. */
  readonly refusals: Refusals;
  /** Whether a request path is an RPC whose request is a stream (exempt from the budget). */
  readonly isStreamingRequest: (path: string) => boolean;
}

/** See {@link createRequestBudget}. */
export interface RequestBudget {
  /**
   * Admits a request, or answers it with a refusal and returns false. An
   * admitted request with a unary body is counted until its body has
   * arrived or its response has closed, and its body is metered.
   */
  admit(req: Request, res: Response): boolean;
  /** How many admitted requests are waiting for their body. */
  readonly pending: number;
  /** How many bytes of unfinished bodies those requests hold. */
  readonly pendingBytes: number;
}

type BodyChunk = Buffer | Uint8Array;
type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

/**
 * Arranges for an HTTP/2 request's stream to be reset once its response is
 * out, unless `bodyEnded` says the request ended, so the client stops
 * sending it and nothing of it is held; returns the function that resets
 * it, for a response that ends without trailers. "Out" is once the compat
 * layer has sent the trailers it sends at the end of every response with a
 * body (`wantTrailers`): a reset any earlier could overtake them.
 *
 * The reset is RST_STREAM CANCEL. RFC 9113 (section 8.1) suggests NO_ERROR
 * after a complete response, but Node 20 does not send a NO_ERROR reset of
 * a stream whose request is still open (the client never learns the stream
 * is over), and was seen spinning in `SendPendingData` on one; clients read
 * the status they already received either way.
 *
 * HTTP/1.1 needs nothing here: Node discards the rest of the body, and
 * closes the connection at its `requestTimeout`.
 */
function closeUnfinishedRequestAfterResponse(req: Request, bodyEnded: () => boolean): () => void {
  if (!("stream" in req)) return () => {};
  const { stream } = req;
  const close = () => {
    if (!bodyEnded() && !stream.closed && !stream.destroyed) stream.close(http2.NGHTTP2_CANCEL);
  };
  stream.once("wantTrailers", () => setImmediate(close));
  return close;
}

/** What reading a metered body needs from its budget. */
interface BodyMeter {
  /** Set once the body failed (deadline, budget): every later read throws it. */
  readonly failure: () => ConnectError | undefined;
  /** Rejects with the failure when it happens. */
  readonly failed: Promise<never>;
  /** Takes a chunk's bytes from the budget; throws the failure when they do not fit. */
  take(bytes: number): void;
  /** The body has ended. */
  ended(): void;
  /** Whether somebody is waiting for the next chunk. */
  reading: boolean;
}

/**
 * Replaces `req`'s async iterator (how connect-es reads a body) with one
 * that reads through `meter`: each chunk is taken from the budget, and a
 * read waiting when the body fails rejects with the failure. The original
 * iterator is never returned on failure, since that would destroy the
 * request before connect-es answers it.
 */
function readThrough(req: Request, meter: BodyMeter): void {
  const source = req[Symbol.asyncIterator].bind(req) as () => AsyncIterator<BodyChunk>;
  (req as { [Symbol.asyncIterator]: () => AsyncIterator<BodyChunk> })[Symbol.asyncIterator] =
    () => {
      const chunks = source();
      return {
        async next() {
          const failed = meter.failure();
          if (failed !== undefined) throw failed;
          meter.reading = true;
          const result = await Promise.race([chunks.next(), meter.failed]).finally(() => {
            meter.reading = false;
          });
          if (result.done === true) meter.ended();
          else meter.take(result.value.byteLength);
          return result;
        },
        async return(value?: unknown) {
          meter.ended();
          return (await chunks.return?.(value)) ?? { done: true, value: undefined };
        },
      };
    };
}

/** Creates the budget; see the module comment. */
export function createRequestBudget(options: RequestBudgetOptions): RequestBudget {
  const { limits, refusals } = options;
  let pending = 0;
  let pendingBytes = 0;

  /** Counts `req` until its body ends or its response closes, and meters its body. */
  function meter(req: Request, res: Response): void {
    pending++;
    let held = 0;
    let released = false;
    let bodyEnded = false;
    let failure: ConnectError | undefined;
    let reject: (error: ConnectError) => void = () => {};
    const failed = new Promise<never>((_resolve, rejectFailed) => {
      reject = rejectFailed;
    });
    failed.catch(() => {});
    const closeRequest = closeUnfinishedRequestAfterResponse(req, () => bodyEnded);
    const release = () => {
      if (released) return;
      released = true;
      clearTimeout(deadline);
      pending--;
      pendingBytes -= held;
      held = 0;
    };
    const fail = (error: ConnectError) => {
      failure = error;
      release();
      reject(error);
    };
    const body: BodyMeter = {
      failure: () => failure,
      failed,
      reading: false,
      ended() {
        bodyEnded = true;
        release();
      },
      take(bytes) {
        if (released) return;
        if (!admitBodyChunk(pendingBytes, bytes, limits.maxPendingRequestBytes)) {
          refusals.refuse("max_pending_request_bytes", { path: req.url, pendingBytes });
          const message = `unfinished request bodies hold all the memory the server allows them (${limits.maxPendingRequestBytes} bytes); retry later`;
          fail(new ConnectError(message, Code.ResourceExhausted));
          throw failure;
        }
        held += bytes;
        pendingBytes += bytes;
      },
    };
    const deadline = setTimeout(() => {
      refusals.refuse("request_body_timeout", { path: req.url, received: held });
      const message = `the request body did not arrive within ${limits.requestBodyTimeoutMs} ms`;
      fail(new ConnectError(message, Code.DeadlineExceeded));
      // Nobody reading the body (not a connect-es route): answer it here.
      if (!body.reading) {
        sendRefusal(res, req.headers["content-type"], Code.DeadlineExceeded, message, 0);
        closeRequest();
      }
    }, limits.requestBodyTimeoutMs);
    deadline.unref();
    res.once("close", release);
    readThrough(req, body);
  }

  return {
    admit(req, res) {
      const kind = classifyRequest({
        httpVersionMajor: req.httpVersionMajor,
        endAfterHeaders: "stream" in req ? req.stream.endAfterHeaders : undefined,
        contentLength: req.headers["content-length"],
        transferEncoding: req.headers["transfer-encoding"],
        streamingRequest: options.isStreamingRequest((req.url ?? "").split("?")[0] ?? ""),
      });
      if (kind !== "unary-body") return true;
      if (!admitOneMore(pending, limits.maxPendingRequests)) {
        refusals.refuse("max_pending_requests", { path: req.url, pending });
        sendRefusal(
          res,
          req.headers["content-type"],
          Code.ResourceExhausted,
          `the server is waiting for ${pending} request bodies, its most; retry later`,
          RETRY_AFTER_MS,
        );
        closeUnfinishedRequestAfterResponse(req, () => false)();
        return false;
      }
      meter(req, res);
      return true;
    },
    get pending() {
      return pending;
    },
    get pendingBytes() {
      return pendingBytes;
    },
  };
}
