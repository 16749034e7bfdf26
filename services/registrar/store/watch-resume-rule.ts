/**
 * Whether a store watch whose etcd stream failed is resumed on another
 * member or ends. A stream that failed without a compaction (a member that
 * went silent, restarted, or cut the stream) is opened again from the
 * revision after the last change it reported, so nothing is missed and the
 * store's readers never see the failure: the member that went silent is set
 * aside (etcd-watch.ts), so the new stream goes to another one. Only when
 * every member failed in a row, each without ever confirming a stream, does
 * the watch end (the store is then unavailable); a compaction always ends it
 * (its reader must list again). With one endpoint there is nowhere else to
 * go, and a failure ends the watch as before. Synchronous and free of I/O.
 */

/** A failure of the stream under a store watch. */
export interface WatchFailure {
  /** Whether etcd refused the start revision as compacted. */
  readonly compacted: boolean;
  /** The etcd endpoints the client was given; at least one. */
  readonly endpointCount: number;
  /** The failures in a row before this one with no stream confirmed in between. */
  readonly failuresInRow: number;
}

/**
 * `"resume"` (open the stream again from the next revision) or `"end"` (the
 * watch fails with this error): resume unless compacted, with two or more
 * endpoints, while fewer than `endpointCount` failures came in a row.
 */
export function judgeWatchFailure(failure: WatchFailure): "resume" | "end" {
  if (failure.compacted || failure.endpointCount < 2) return "end";
  return failure.failuresInRow < failure.endpointCount ? "resume" : "end";
}
