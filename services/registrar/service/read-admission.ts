/**
 * Whether a store read made for a request may start now, wait for a slot, or
 * must be refused: the decision of the list read limiter (`store-reads.ts`).
 * At most `concurrency` reads run at once and at most `queue` wait; a read
 * that finds both full is refused at once, so that a burst of requests costs
 * the store no more than `concurrency` reads at a time and no request piles
 * up behind a queue it cannot get through. Synchronous and free of I/O.
 */

/** The limiter's bounds. */
export interface ReadLimits {
  /** How many store reads may run at once; at least 1. */
  readonly concurrency: number;
  /** How many reads may wait for a slot; 0 refuses whatever cannot run at once. */
  readonly queue: number;
}

/** The default bounds: eight reads at once, thirty-two waiting. */
export const DEFAULT_READ_LIMITS: ReadLimits = { concurrency: 8, queue: 32 };

/** What the limiter holds when a read asks to start. */
export interface ReadLoad {
  /** Reads running now. */
  readonly running: number;
  /** Reads waiting for a slot, in arrival order. */
  readonly waiting: number;
}

/** The limiter's answer to a read: start now, wait in line, or be refused. */
export type Admission = "run" | "wait" | "refuse";

/**
 * Decides a new read: `"run"` while fewer than `concurrency` run and none
 * waits (a read never overtakes one in line), `"wait"` while fewer than
 * `queue` wait, `"refuse"` otherwise.
 */
export function admitRead(load: ReadLoad, limits: ReadLimits): Admission {
  if (load.running < limits.concurrency && load.waiting === 0) return "run";
  if (load.waiting < limits.queue) return "wait";
  return "refuse";
}
