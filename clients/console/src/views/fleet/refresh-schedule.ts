/**
 * When the fleet view refreshes: every second, and every quarter second for
 * a while after the live feed saw a change, because the clusters publish
 * their import status up to a second (the registrars' `--status-interval`)
 * after the store changed, and GetFleetStatus reads that. Pure.
 */

/** The steady period. */
export const REFRESH_MS = 1000;
/** The period while following a change. */
export const FOLLOW_MS = 250;
/** How long a change is followed. */
export const FOLLOW_FOR_MS = 2500;

/**
 * Whether a refresh is due at `nowMs`, the last one having started at
 * `lastStartMs`, a change being followed until `followUntilMs`.
 */
export function refreshDue(nowMs: number, lastStartMs: number, followUntilMs: number): boolean {
  const since = nowMs - lastStartMs;
  return since >= REFRESH_MS || (nowMs < followUntilMs && since >= FOLLOW_MS);
}
