/**
 * The admin port's `/healthz` decision. The admin port answers from a worker
 * thread, so that a main thread busy with a flood of clients cannot make a
 * kubelet probe wait (and restart a process that is serving); what the probe
 * must still learn is whether the main thread's event loop turns at all.
 * The main thread counts beats in shared memory from a timer; the worker
 * notes, on its own monotonic clock, when it last saw the count change.
 * A loop that has not beaten for the stall limit is reported unhealthy,
 * which is what makes kubelet restart a process stuck in a synchronous loop.
 *
 * Pure: the caller reads the count and the clock.
 */
import { type AdminResponse, HEALTHY, TEXT } from "./admin-routes.js";

/** How often the main thread beats. */
export const BEAT_INTERVAL_MS = 250;

/**
 * How long the main thread's loop may go without a beat before `/healthz`
 * fails: far above a loop saturated by clients (turns of about a second were
 * measured under the hostile bench), far below a stuck process's lifetime.
 */
export const DEFAULT_STALL_LIMIT_MS = 10_000;

/** What the worker knows of the beats: the last count seen and when it changed. */
export interface BeatWatch {
  readonly beats: number;
  readonly changedAtMs: number;
}

/** The watch after reading `beats` at `nowMs`: the change time moves only when the count moved. */
export function observeBeats(
  watch: BeatWatch | undefined,
  beats: number,
  nowMs: number,
): BeatWatch {
  if (watch !== undefined && watch.beats === beats) return watch;
  return { beats, changedAtMs: nowMs };
}

/**
 * The `/healthz` answer at `nowMs`: `ok` while the main loop beat within
 * `stallLimitMs`, else 503 saying for how long it has not.
 */
export function livenessResponse(
  watch: BeatWatch,
  nowMs: number,
  stallLimitMs: number,
): AdminResponse {
  const stalledMs = nowMs - watch.changedAtMs;
  if (stalledMs < stallLimitMs) return HEALTHY;
  return {
    status: 503,
    contentType: TEXT,
    body:
      `the main event loop has not turned for ${(stalledMs / 1_000).toFixed(1)} s ` +
      `(limit ${(stallLimitMs / 1_000).toFixed(1)} s)\n`,
  };
}
