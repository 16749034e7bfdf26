/**
 * The budget of unfinished request bodies: how many requests may be waiting
 * for their body at once, how many bytes those bodies may hold together,
 * and how long each may take to arrive. A request beyond the count is
 * answered RESOURCE_EXHAUSTED at once (`refusal-response.ts`), before any
 * handler sees it; a body that would go beyond the bytes, or that is still
 * incomplete at its deadline, fails the read of the request inside
 * connect-es (`body-meter.ts`), which answers the client in its protocol
 * (RESOURCE_EXHAUSTED or DEADLINE_EXCEEDED). Either way the rest of the body
 * is dropped and an HTTP/2 stream still open a moment later is reset
 * (`stream-reset.ts`), so nothing of it is held any longer. The count is
 * global, not shared fairly like the calls answered (`call-admission.ts`):
 * cutting off one connection's unfinished body for another's cost the
 * hostile bench's registrar about 80 MiB more under 20,000 streams (cause
 * not found), and a well-behaved client's body arrives with its headers.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  admitBodyChunk,
  admitOneMore,
  classifyRequest,
  RETRY_AFTER_MS,
} from "./admission-rules.js";
import { meterBody } from "./body-meter.js";
import { refuseRequest, retryableError, sendRefusal } from "./refusal-response.js";
import type { Refusals } from "./refusals.js";
import type { ServerLimits } from "./server-limits.js";
import { resetUnlessEnded } from "./stream-reset.js";

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

type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

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
    let failure: ConnectError | undefined;
    let reject: (error: ConnectError) => void = () => {};
    const failed = new Promise<never>((_resolve, rejectFailed) => {
      reject = rejectFailed;
    });
    failed.catch(() => {});
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
      body.discard();
      resetUnlessEnded(req);
    };
    const body = meterBody(req, {
      failure: () => failure,
      failed,
      ended: release,
      take(bytes) {
        if (released) return;
        if (!admitBodyChunk(pendingBytes, bytes, limits.maxPendingRequestBytes)) {
          refusals.refuse("max_pending_request_bytes", { path: req.url, pendingBytes });
          const message = `unfinished request bodies hold all the memory the server allows them (${limits.maxPendingRequestBytes} bytes); retry later`;
          fail(retryableError(message, Code.ResourceExhausted, RETRY_AFTER_MS));
          throw failure;
        }
        held += bytes;
        pendingBytes += bytes;
      },
    });
    const deadline = setTimeout(() => {
      refusals.refuse("request_body_timeout", { path: req.url, received: held });
      const message = `the request body did not arrive within ${limits.requestBodyTimeoutMs} ms`;
      // Nobody reading the body (not a connect-es route): answer it here.
      if (!body.reading)
        sendRefusal(res, req.headers["content-type"], Code.DeadlineExceeded, message, 0);
      fail(new ConnectError(message, Code.DeadlineExceeded));
    }, limits.requestBodyTimeoutMs);
    deadline.unref();
    res.once("close", release);
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
        refuseRequest(
          req,
          res,
          Code.ResourceExhausted,
          `the server is waiting for ${limits.maxPendingRequests} request bodies, its most; retry later`,
          RETRY_AFTER_MS,
        );
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
