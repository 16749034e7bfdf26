/**
 * The decision behind rate-limited log lines: a line of one kind is written
 * at most once per interval, and the next one written says how many were
 * left out in between. Pure: the caller keeps the state and passes the time.
 */

/** What a rate limit remembers about one kind of line. */
export interface LogRateState {
  /** When a line of this kind was last written; undefined before the first. */
  readonly lastLoggedAt: number | undefined;
  /** How many lines of this kind were left out since then. */
  readonly suppressed: number;
}

/** The state of a kind of line that was never logged. */
export const INITIAL_LOG_RATE_STATE: LogRateState = { lastLoggedAt: undefined, suppressed: 0 };

/** What {@link decideLogLine} decided. */
export interface LogRateDecision {
  /** Whether to write this line. */
  readonly log: boolean;
  /** When `log`: how many lines of the kind were left out before this one; 0 otherwise. */
  readonly suppressed: number;
  /** The state to keep for the next line of this kind. */
  readonly next: LogRateState;
}

/**
 * Decides whether a line may be written at `now` (milliseconds): yes when
 * none was written yet or the last one was at least `intervalMs` ago.
 */
export function decideLogLine(
  state: LogRateState,
  now: number,
  intervalMs: number,
): LogRateDecision {
  if (state.lastLoggedAt === undefined || now - state.lastLoggedAt >= intervalMs) {
    return {
      log: true,
      suppressed: state.suppressed,
      next: { lastLoggedAt: now, suppressed: 0 },
    };
  }
  return {
    log: false,
    suppressed: 0,
    next: { lastLoggedAt: state.lastLoggedAt, suppressed: state.suppressed + 1 },
  };
}
