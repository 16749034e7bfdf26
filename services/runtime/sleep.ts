/**
 * The one way a long-lived loop waits here: a timer that an abort signal, or
 * its owner, can cut short. It never rejects, so a loop that sleeps between
 * attempts checks its own stop condition after waking instead of catching.
 */

/** A wait in progress; see {@link wakeableSleep}. */
export interface WakeableSleep {
  /** Resolves when the time is up, the signal aborts or {@link WakeableSleep.wake} is called. */
  readonly done: Promise<void>;
  /** Ends the wait now; idempotent. */
  wake(): void;
}

/**
 * Waits `ms` milliseconds, or less when `signal` aborts (at once when it is
 * already aborted) or `wake()` is called. Never rejects; the timer and the
 * abort listener are released when the wait ends, however it ends.
 */
export function wakeableSleep(ms: number, signal?: AbortSignal): WakeableSleep {
  let wake = (): void => {};
  const done = new Promise<void>((resolve) => {
    let ended = false;
    const finish = (): void => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", finish);
      resolve();
    };
    const timer = setTimeout(finish, Math.max(0, ms));
    wake = finish;
    signal?.addEventListener("abort", finish, { once: true });
    if (signal?.aborted === true) finish();
  });
  return { done, wake: () => wake() };
}

/** Waits `ms` milliseconds, or less when `signal` aborts. Never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return wakeableSleep(ms, signal).done;
}
