/**
 * Max-min fairness for a shared limit of the front: the unary calls answered
 * at once (`call-admission.ts`). A global limit alone lets the clients that
 * take the most shut everyone else out: a hundred connections keeping a
 * hundred list calls each in flight kept every polite client's call refused
 * for as long as they cared. So when the limit is full, a request from a
 * connection that holds none is admitted if another connection holds two or
 * more, and the heaviest connection's oldest hold is cut off to make room.
 * Every other request is refused as before, cheaply. A client with one
 * request at a time thus gets in unless every holder holds just one.
 *
 * Only a connection holding none may take a place: letting any lighter
 * connection take one made a flood from two hundred connections cut itself
 * off endlessly (each new stream of a connection holding one took the place
 * of one holding two), and every cut-off admitted request cost a handler and
 * an answer instead of a remembered refusal (the hostile bench's registrar
 * went from 507 to 920 MiB). The unfinished request bodies are not shared
 * this way (`request-budget.ts` says why).
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
