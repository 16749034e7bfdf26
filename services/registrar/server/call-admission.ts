/**
 * The bound on unary calls being answered at once (`--max-concurrent-calls`).
 * A unary call (ListConfig, ListAllConfig, GetConfigStatus, health checks)
 * holds what its answer needs (a listing, an encoded response on its way to
 * the client) from the moment it is admitted until its response closes; ten
 * thousand concurrent list calls would hold more than the heap. One call
 * beyond the bound is answered RESOURCE_EXHAUSTED with retry advice at once
 * (`refusal-response.ts`), before any handler sees it, and counted as the
 * refusal `max_concurrent_calls`. Streaming calls are bounded elsewhere
 * (WatchConfig by `--max-watch-streams`), and plain routes (`/healthz`,
 * `/metrics`) are not calls. The bound is shared fairly (`fair-share.ts`):
 * at the bound, a call from a connection with no call being answered is
 * admitted when another has two or more, and the heaviest connection's
 * oldest call is cut off (its stream reset, as if its client had cancelled
 * it), so a flood of calls on many streams cannot shut out a client with one.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Http2ServerRequest, type Http2ServerResponse, constants as http2 } from "node:http2";
import { Code } from "@connectrpc/connect";
import { RETRY_AFTER_MS } from "./admission-rules.js";
import { connectionOf, createHolderLedger } from "./holder-ledger.js";
import { refuseRequest } from "./refusal-response.js";
import type { Refusals } from "./refusals.js";

/** Options of {@link createCallAdmission}. */
export interface CallAdmissionOptions {
  /** The most unary calls answered at once. */
  readonly maxConcurrentCalls: number;
  /** Where refusals are counted and logged. */
  readonly refusals: Refusals;
  /** Whether a request path (without its query) is a unary RPC. */
  readonly isUnaryCall: (path: string) => boolean;
}

/** See {@link createCallAdmission}. */
export interface CallAdmission {
  /** Admits a request (counted until its response closes when it is a unary call), or refuses it and returns false. */
  admit(
    req: IncomingMessage | Http2ServerRequest,
    res: ServerResponse | Http2ServerResponse,
  ): boolean;
  /** How many unary calls are being answered. */
  readonly inFlight: number;
}

/** Creates the admission; see the module comment. */
export function createCallAdmission(options: CallAdmissionOptions): CallAdmission {
  /** The calls being answered by connection; each hold cuts its call off. */
  const ledger = createHolderLedger<() => void>();
  return {
    admit(req, res) {
      const path = (req.url ?? "").split("?")[0] ?? "";
      if (!options.isUnaryCall(path)) return true;
      const connection = connectionOf(req);
      const { decision, heaviest } = ledger.decide(connection, options.maxConcurrentCalls);
      if (decision === "preempt") heaviest?.oldest();
      if (decision === "refuse") {
        options.refusals.refuse("max_concurrent_calls", { path, inFlight: ledger.total });
        refuseRequest(
          req,
          res,
          Code.ResourceExhausted,
          `the server is answering ${options.maxConcurrentCalls} calls, its most; retry later`,
          RETRY_AFTER_MS,
        );
        return false;
      }
      const forget = ledger.add(connection, () => {
        forget();
        options.refusals.refuse("preempted_call", { path });
        cutOff(req);
      });
      res.once("close", forget);
      return true;
    },
    get inFlight() {
      return ledger.total;
    },
  };
}

/**
 * Ends a call being answered the way a client's cancel would: its HTTP/2
 * stream reset (CANCEL), or its HTTP/1.1 connection closed. The handler sees
 * its client gone (its signal aborted, its writes dropped).
 */
function cutOff(req: IncomingMessage | Http2ServerRequest): void {
  if ("stream" in req) {
    if (!req.stream.closed && !req.stream.destroyed) req.stream.close(http2.NGHTTP2_CANCEL);
    return;
  }
  req.socket.destroy();
}
