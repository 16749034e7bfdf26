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
 * `/metrics`) are not calls.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { Code } from "@connectrpc/connect";
import { admitOneMore, RETRY_AFTER_MS } from "./admission-rules.js";
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
  let inFlight = 0;
  return {
    admit(req, res) {
      const path = (req.url ?? "").split("?")[0] ?? "";
      if (!options.isUnaryCall(path)) return true;
      if (!admitOneMore(inFlight, options.maxConcurrentCalls)) {
        options.refusals.refuse("max_concurrent_calls", { path, inFlight });
        refuseRequest(
          req,
          res,
          Code.ResourceExhausted,
          `the server is answering ${options.maxConcurrentCalls} calls, its most; retry later`,
          RETRY_AFTER_MS,
        );
        return false;
      }
      inFlight++;
      res.once("close", () => {
        inFlight--;
      });
      return true;
    },
    get inFlight() {
      return inFlight;
    },
  };
}
