/**
 * Max-min fairness for the front's shared limits (unfinished request bodies,
 * unary calls answered at once). A global limit alone lets the clients that
 * take the most shut everyone else out: two hundred connections holding a
 * hundred unfinished bodies each kept every polite client's ListConfig
 * refused for as long as they cared. So when a limit is full, a request from
 * a connection that holds fewer than the heaviest connection (by more than
 * the one it asks for) is admitted, and the heaviest connection's oldest
 * hold is cut off to make room (that connection is told RESOURCE_EXHAUSTED
 * or has its stream reset). A request from a connection that already holds
 * as much as the heaviest is refused as before. An attacker thus keeps at
 * most an equal share, whatever number of streams it opens, and a client
 * with one request in flight always gets in.
 *
 * Pure: the shell (`holder-ledger.ts` and its users) keeps the counts.
 */

/** What to do with one more request when `total` of `limit` are held. */
export type FairShareDecision =
  /** The limit has room. */
  | "admit"
  /** The limit is full, and the requester is lighter than the heaviest: admit it, cut off the heaviest's oldest. */
  | "preempt"
  /** The limit is full, and the requester holds as much as anyone: refuse it. */
  | "refuse";

/** What {@link decideFairShare} looks at. */
export interface FairShareState {
  /** Holds taken, over every connection. */
  readonly total: number;
  /** The limit. */
  readonly limit: number;
  /** Holds taken by the requesting connection. */
  readonly own: number;
  /** Holds taken by the connection that holds the most (0 when none). */
  readonly heaviest: number;
}

/** Decides one more request; see the module comment. */
export function decideFairShare(state: FairShareState): FairShareDecision {
  if (state.total < state.limit) return "admit";
  return state.own + 1 < state.heaviest ? "preempt" : "refuse";
}
