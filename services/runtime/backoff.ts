/**
 * Exponential backoff with jitter, for loops that retry while the store is
 * down (the export controller, the leader election).
 */

/** Options of {@link createBackoff}. */
export interface BackoffOptions {
  /** The first delay before jitter, in milliseconds; positive. */
  readonly initialMs: number;
  /** The cap on the delay before jitter, in milliseconds; at least `initialMs`. */
  readonly maxMs: number;
  /** A source of uniform numbers in [0, 1); default `Math.random` (tests pass a fixed one). */
  readonly random?: () => number;
}

/** A sequence of growing, jittered delays. */
export interface Backoff {
  /**
   * Returns the next delay in milliseconds: the current base delay halved
   * plus a random part of the other half ("equal jitter"), then doubles the
   * base delay up to the cap.
   */
  next(): number;
  /** Starts the sequence again from the initial delay (after a success). */
  reset(): void;
  /** How many delays {@link Backoff.next} has returned since the last reset. */
  readonly attempts: number;
}

/** Creates a backoff; throws a RangeError for a non-positive initial delay or a cap below it. */
export function createBackoff(options: BackoffOptions): Backoff {
  const { initialMs, maxMs } = options;
  if (!(initialMs > 0) || !(maxMs >= initialMs)) {
    throw new RangeError(`backoff needs 0 < initialMs <= maxMs, got ${initialMs} and ${maxMs}`);
  }
  const random = options.random ?? Math.random;
  let base = initialMs;
  let attempts = 0;
  return {
    next() {
      const delay = base / 2 + random() * (base / 2);
      base = Math.min(maxMs, base * 2);
      attempts++;
      return delay;
    },
    reset() {
      base = initialMs;
      attempts = 0;
    },
    get attempts() {
      return attempts;
    },
  };
}
