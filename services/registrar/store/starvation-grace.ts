/**
 * When a missed deadline counts against the store. A health ping or a watch
 * probe that gets no answer in time normally means the store is gone (a
 * frozen or partitioned etcd), and the registrar says so at once. But a
 * deadline can also pass because this process was too busy to read the
 * answer: expired timers run before pending I/O, so after a long stretch of
 * work (a burst of requests) the timer fires first. Such a miss is granted
 * a few immediate retries; a miss while the event loop was mostly idle, or
 * one more after the grace is used up, counts. Request load can therefore
 * delay the verdict on a dead store by at most `maxGrace` deadlines, and
 * never turns a live store into a lost one by itself. Synchronous and free
 * of I/O.
 */

/** The rule of {@link judgeMissedDeadline}. */
export interface StarvationGrace {
  /**
   * The event loop utilization (0 to 1) over the missed wait at or above
   * which the process, not the store, may be why it was missed.
   */
  readonly busyThreshold: number;
  /** How many misses in a row may be excused so; the next one counts. */
  readonly maxGrace: number;
}

/**
 * The registrar's rule: excuse at most ten misses in a row, each while the
 * loop was busy at least half the wait. With the 2 s store timeout a dead
 * store is declared lost within about 22 s of saturation. Two were too few:
 * under the hostile bench on a loaded machine the grace ran out while etcd
 * was fine, and "store lost" closed every agent's watch stream (276
 * reconnects), the very load-induced teardown the grace is there to stop.
 */
export const DEFAULT_STARVATION_GRACE: StarvationGrace = { busyThreshold: 0.5, maxGrace: 10 };

/** A deadline that passed: how busy the loop was while waiting, and how many misses were excused in a row before it. */
export interface MissedDeadline {
  /** The event loop utilization over the wait, 0 to 1. */
  readonly busy: number;
  /** The misses excused in a row just before this one (0 after an answer). */
  readonly excused: number;
}

/**
 * Judges a missed deadline: `"excuse"` (try again at once) when the loop was
 * at least `busyThreshold` busy over the wait and fewer than `maxGrace`
 * misses were excused in a row; `"count"` (the store is lost) otherwise.
 */
export function judgeMissedDeadline(
  miss: MissedDeadline,
  grace: StarvationGrace = DEFAULT_STARVATION_GRACE,
): "excuse" | "count" {
  return miss.busy >= grace.busyThreshold && miss.excused < grace.maxGrace ? "excuse" : "count";
}
