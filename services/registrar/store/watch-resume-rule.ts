/**
 * Whether a store watch whose etcd stream failed is resumed or ends. A
 * stream that failed without a compaction (a member that went silent,
 * restarted, or cut the stream) is opened again from the revision after the
 * last change it reported, so nothing is missed and the store's readers never
 * see the failure: the member that went silent is set aside (etcd-watch.ts),
 * so the new stream goes to another one. The first resume is immediate; when
 * it fails too (every member set aside for a moment, as while a cluster
 * elects a new leader), the next waits a little, and once the stream has been
 * failing for {@link RESUME_WINDOW_MS} without one confirmed, the watch ends
 * (the store is then unavailable). A compaction always ends it (its reader
 * must list again). With one endpoint there is nowhere else to go, and a
 * failure ends the watch as before. Synchronous and free of I/O.
 */

/** How long a watch may keep failing to resume before it ends, in milliseconds. */
export const RESUME_WINDOW_MS = 3_000;

/** The wait before a resume after a failed one, in milliseconds. */
export const RESUME_RETRY_MS = 250;

/** A failure of the stream under a store watch. */
export interface WatchFailure {
  /** Whether etcd refused the start revision as compacted. */
  readonly compacted: boolean;
  /** The etcd endpoints the client was given; at least one. */
  readonly endpointCount: number;
  /**
   * The time since the first failure of this run (0 for the first; a run
   * ends when a stream is confirmed), in milliseconds.
   */
  readonly failingForMs: number;
}

/** What {@link judgeWatchFailure} decides. */
export type WatchFailureVerdict = { readonly resumeAfterMs: number } | "end";

/**
 * `{ resumeAfterMs }` (open the stream again from the next revision, after
 * that wait) or `"end"` (the watch fails with this error); see the file
 * comment.
 */
export function judgeWatchFailure(failure: WatchFailure): WatchFailureVerdict {
  if (failure.compacted || failure.endpointCount < 2) return "end";
  if (failure.failingForMs >= RESUME_WINDOW_MS) return "end";
  return { resumeAfterMs: failure.failingForMs === 0 ? 0 : RESUME_RETRY_MS };
}
