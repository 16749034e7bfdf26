/**
 * Who holds a shared limit: the holds of each connection, oldest first, so
 * that {@link decideFairShare} can be asked and the heaviest connection's
 * oldest hold cut off. A hold is whatever its user needs to cut it off (a
 * callback, usually). Synchronous; the connection is any object identifying
 * one (an HTTP/2 session, an HTTP/1.1 socket).
 */
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { decideFairShare, type FairShareDecision } from "./fair-share.js";

/** The connection holding the most, and its oldest hold. */
export interface Heaviest<H> {
  readonly connection: object;
  readonly count: number;
  readonly oldest: H;
}

/** See {@link createHolderLedger}. */
export interface HolderLedger<H> {
  /** Records `hold` for `connection`; the returned function forgets it (idempotent). */
  add(connection: object, hold: H): () => void;
  /** The holds of `connection`. */
  countOf(connection: object): number;
  /** The connection holding the most (the first found among equals), or undefined when none holds any. */
  heaviest(): Heaviest<H> | undefined;
  /** What to do with one more request of `connection` under `limit` (see `fair-share.ts`). */
  decide(
    connection: object,
    limit: number,
  ): { decision: FairShareDecision; heaviest?: Heaviest<H> };
  /** Holds over every connection. */
  readonly total: number;
}

/** Creates an empty ledger. */
export function createHolderLedger<H>(): HolderLedger<H> {
  const holds = new Map<object, Set<H>>();
  let total = 0;
  const ledger: HolderLedger<H> = {
    add(connection, hold) {
      let own = holds.get(connection);
      if (own === undefined) {
        own = new Set();
        holds.set(connection, own);
      }
      own.add(hold);
      total++;
      const set = own;
      return () => {
        if (!set.delete(hold)) return;
        total--;
        if (set.size === 0 && holds.get(connection) === set) holds.delete(connection);
      };
    },
    countOf(connection) {
      return holds.get(connection)?.size ?? 0;
    },
    heaviest() {
      let found: Heaviest<H> | undefined;
      for (const [connection, set] of holds) {
        if (found !== undefined && set.size <= found.count) continue;
        const oldest = set.values().next().value as H;
        found = { connection, count: set.size, oldest };
      }
      return found;
    },
    decide(connection, limit) {
      if (total < limit) return { decision: "admit" };
      const heaviest = ledger.heaviest();
      const decision = decideFairShare({
        total,
        limit,
        own: ledger.countOf(connection),
        heaviest: heaviest?.count ?? 0,
      });
      return { decision, heaviest };
    },
    get total() {
      return total;
    },
  };
  return ledger;
}

/**
 * The connection a request came on, as a ledger key: its HTTP/2 session, or
 * its socket for HTTP/1.1.
 */
export function connectionOf(req: IncomingMessage | Http2ServerRequest): object {
  if ("stream" in req) return req.stream.session ?? req.stream;
  return req.socket;
}
