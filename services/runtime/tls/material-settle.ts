/**
 * When a change of the TLS files may be read and decided (pure). SPIRE's
 * spiffe-helper rewrites the certificate, the key and the bundle in place,
 * one file after another, so a read in the middle of a rotation sees a new
 * certificate with the old key (or a file cut short), which is no refusal
 * worth a warning. The shell feeds this every stat signature it takes (on a
 * watch event, at the periodic re-stat, when a timer set here fires) and
 * the outcome of every read, and it says what to do:
 *
 * - read only once the signature has not changed for `settleMs` (the files
 *   are quiet), and discard a read the files changed under;
 * - a read whose set is inconsistent (any piece refused) is read again
 *   after another `settleMs`, up to `retries` times; then its refusals are
 *   decided (counted and logged) like any other.
 */

/** How long the files must be quiet, and how many inconsistent reads are read again. */
export interface SettlePolicy {
  /** Milliseconds without a change before the files are read as one set. */
  readonly settleMs: number;
  /** Inconsistent reads of one change read again before their refusals count. */
  readonly retries: number;
}

/**
 * 250 ms of quiet: spiffe-helper's three writes follow each other within
 * milliseconds (tens on a node busy enough to deschedule it), a quarter
 * second covers that many times over, and a rotation taken a quarter second
 * later is nothing against certificates renewed at half their hour. Four
 * retries: a pair that is really mismatched is reported about 1.25 s after
 * it was written, still inside one scrape interval of the counter.
 */
export const DEFAULT_SETTLE_POLICY: SettlePolicy = { settleMs: 250, retries: 4 };

/** What the shell carries between observations. */
export interface SettleState {
  /** The files' stat signature as last seen. */
  readonly signature: string;
  /** A change seen and not decided yet. */
  readonly pending: boolean;
  /** When the signature last changed, or the last inconsistent read was made. */
  readonly quietSince: number;
  /** Inconsistent reads of the pending change so far. */
  readonly retries: number;
}

/** What to do next: nothing, stat again at `until`, read the files now, or decide the read. */
export type SettleAction =
  | { readonly kind: "none" }
  | { readonly kind: "wait"; readonly until: number }
  | { readonly kind: "read" }
  | { readonly kind: "decide" };

/** The next state and what to do. */
export interface SettleStep {
  readonly state: SettleState;
  readonly action: SettleAction;
}

/** The state once the files of `signature` were decided (or first read). */
export function settledState(signature: string, at: number): SettleState {
  return { signature, pending: false, quietSince: at, retries: 0 };
}

/**
 * A stat of the files at `at`: a new signature starts (or restarts) the
 * quiet time; a pending change quiet for `settleMs` is read; otherwise the
 * shell waits for the end of the quiet time, or does nothing.
 */
export function observeStat(
  state: SettleState,
  policy: SettlePolicy,
  at: number,
  signature: string,
): SettleStep {
  if (signature !== state.signature) {
    const changed = { ...state, signature, pending: true, quietSince: at };
    return { state: changed, action: { kind: "wait", until: at + policy.settleMs } };
  }
  if (!state.pending) return { state, action: { kind: "none" } };
  const until = state.quietSince + policy.settleMs;
  return { state, action: at >= until ? { kind: "read" } : { kind: "wait", until } };
}

/** What a read found: the stat signature taken right after it, and whether every piece was taken or unchanged. */
export interface ReadOutcome {
  readonly signature: string;
  readonly consistent: boolean;
}

/**
 * The outcome of a read begun on a `read` action: files that changed while
 * being read are waited for again (the read is discarded); a consistent
 * read, or an inconsistent one with no retry left, is decided; another
 * inconsistent one is read again after `settleMs`.
 */
export function observeRead(
  state: SettleState,
  policy: SettlePolicy,
  at: number,
  outcome: ReadOutcome,
): SettleStep {
  const wait = { kind: "wait", until: at + policy.settleMs } as const;
  if (outcome.signature !== state.signature) {
    return { state: { ...state, signature: outcome.signature, quietSince: at }, action: wait };
  }
  if (outcome.consistent || state.retries >= policy.retries) {
    return { state: settledState(outcome.signature, at), action: { kind: "decide" } };
  }
  return { state: { ...state, quietSince: at, retries: state.retries + 1 }, action: wait };
}
