import { setTimeout as delay } from "node:timers/promises";

/**
 * Resolves once `predicate` returns true (or a promise of true), checking it
 * every `intervalMs`; rejects with an Error naming `what` when it is still
 * false after `timeoutMs`. An exception thrown by the predicate counts as
 * false until the deadline, and is then reported as the cause.
 */
export async function waitFor(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 5_000,
  what = "condition",
  intervalMs = 10,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      if (await predicate()) return;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`, { cause: lastError });
    }
    await delay(intervalMs);
  }
}
