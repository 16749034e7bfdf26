/**
 * Reading a request body through its budget. connect-es (2.1.2) reads a
 * body by async iteration of the Node request
 * (`universalRequestFromNodeRequest`), so {@link meterBody} replaces that
 * request's async iterator: each chunk read is taken from the budget, and
 * once the body fails (over the budget, or past its deadline) the read in
 * progress and every later one reject with the failure, which connect-es
 * answers in the request's protocol. The rest of the body is then read and
 * dropped (see `stream-reset.ts`). The original iterator is never returned
 * on failure, since that would destroy the request before connect-es
 * answers it.
 */
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import type { ConnectError } from "@connectrpc/connect";

type BodyChunk = Buffer | Uint8Array;

/** What reading a metered body needs from its budget. */
export interface BodyBudget {
  /** The failure of the body once it failed; undefined before. */
  failure(): ConnectError | undefined;
  /** Rejects with the failure when it happens (never resolves). */
  readonly failed: Promise<never>;
  /** Takes a chunk's bytes from the budget; throws the failure when they do not fit. */
  take(bytes: number): void;
  /** The body has been read to its end (or its reader gave up). */
  ended(): void;
}

/** What {@link meterBody} returns. */
export interface MeteredBody {
  /** Whether a read is waiting for the next chunk. */
  readonly reading: boolean;
  /** Reads the rest of the body (from now, or once a reader starts) and drops it. */
  discard(): void;
}

/** Reads `chunks` to their end, dropping them; never throws. */
async function drop(chunks: AsyncIterator<BodyChunk>): Promise<void> {
  try {
    while ((await chunks.next()).done !== true) {
      // Dropped.
    }
  } catch {
    // The request went away.
  }
}

/** Meters `req`'s body through `budget`; see the module comment. */
export function meterBody(
  req: IncomingMessage | Http2ServerRequest,
  budget: BodyBudget,
): MeteredBody {
  const source = req[Symbol.asyncIterator].bind(req) as () => AsyncIterator<BodyChunk>;
  let reading = false;
  let chunks: AsyncIterator<BodyChunk> | undefined;
  let discarding = false;
  (req as { [Symbol.asyncIterator]: () => AsyncIterator<BodyChunk> })[Symbol.asyncIterator] =
    () => {
      const opened = source();
      chunks = opened;
      return {
        async next() {
          const failed = budget.failure();
          if (failed !== undefined) throw failed;
          reading = true;
          const result = await Promise.race([opened.next(), budget.failed]).finally(() => {
            reading = false;
          });
          if (result.done === true) budget.ended();
          else budget.take(result.value.byteLength);
          return result;
        },
        async return(value?: unknown) {
          budget.ended();
          return (await opened.return?.(value)) ?? { done: true, value: undefined };
        },
      };
    };
  return {
    get reading() {
      return reading;
    },
    discard() {
      if (discarding) return;
      discarding = true;
      // Not read through the iterator yet (nobody reads it): drop it as it comes.
      if (chunks === undefined) req.resume();
      else void drop(chunks);
    },
  };
}
