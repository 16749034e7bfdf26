/**
 * Max-min fairness for the front's shared limits (unfinished request bodies,
 * unary calls answered at once). A global limit alone lets the clients that
 * take the most shut everyone else out: two hundred connections holding a
 * hundred unfinished bodies each kept every polite client's ListConfig
 * refused for as long as they cared. So when a limit is full, a request from
 * a connection that holds none is admitted if another connection holds two
 * or more, and the heaviest connection's oldest hold is cut off to make room
 * (that connection is told RESOURCE_EXHAUSTED or has its stream reset).
 * Every other request is refused as before, cheaply. A client with one
 * request at a time thus gets in unless every holder holds just one.
 *
 * Only a connection holding none may take a place: letting any lighter
 * connection take one made a flood from two hundred connections cut itself
 * off endlessly (each new stream of a connection holding one took the place
 * of one holding two), and every cut-off admitted request cost a handler, a
 * body and an answer instead of a remembered refusal: the hostile bench's
 * registrar went from 507 to 920 MiB.
 *
 * Pure: the shell (`holder-ledger.ts` and its users) keeps the counts.
 */

/** What to do with one more request when `total` of `limit` are held. */
export type FairShareDecision =
  /** The limit has room. */
  | "admit"
  /** The limit is full, the requester holds none and the heaviest two or more: admit it, cut off the heaviest's oldest. */
  | "preempt"
  /** The limit is full, and the requester holds some already, or nobody holds more than one: refuse it. */
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
  return state.own === 0 && state.heaviest >= 2 ? "preempt" : "refuse";
}
