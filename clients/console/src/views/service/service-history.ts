/**
 * The history rows of the Service view: the versions of the service the
 * live stream brought while the page is open, newest first, the one shown
 * now marked. Pure.
 */
import type { VersionSeen } from "../../live/live-feed.js";

/** One row of the history table. */
export interface HistoryRow {
  readonly version: string;
  readonly origin: string;
  /** When the console received it (ms since the epoch). */
  readonly receivedAt: number;
  /** Whether it is the version shown now. */
  readonly current: boolean;
}

/**
 * The rows of `seen` (oldest first, as the feed keeps them) newest first;
 * the newest row that has `currentVersion` from `currentOrigin` is marked.
 */
export function historyRows(
  seen: readonly VersionSeen[],
  currentVersion: string,
  currentOrigin: string,
): HistoryRow[] {
  let marked = false;
  return [...seen].reverse().map((entry) => {
    const current = !marked && entry.version === currentVersion && entry.origin === currentOrigin;
    if (current) marked = true;
    return { version: entry.version, origin: entry.origin, receivedAt: entry.receivedAt, current };
  });
}
