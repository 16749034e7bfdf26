/**
 * How long a change takes to reach every watch stream it is for: from the
 * moment the cache hands it to the first stream (the store event's publish;
 * every stream is handed it in that one synchronous call) to the moment the
 * last of them has written it. Pure bookkeeping, no clock and no I/O: the
 * streams (`watch-stream.ts`) give it the times.
 *
 * A change some stream never writes (the stream ended first) is never
 * reported; at most `maxPending` changes are followed at once, the oldest
 * forgotten first, so such changes cannot accumulate.
 */

/** Follows changes from their hand-off to their last write; see {@link createFanoutTracker}. */
export interface FanoutTracker {
  /** One stream was handed the change at `revision`; `now` in ms (any monotonic clock). */
  handed(revision: number, now: number): void;
  /**
   * One stream wrote the change at `revision`. Returns the ms from its first
   * hand-off when this was the last stream it was handed to, else undefined
   * (also for a revision not followed).
   */
  written(revision: number, now: number): number | undefined;
  /** How many changes are being followed (not yet written everywhere). */
  readonly pending: number;
}

/** Creates a tracker following at most `maxPending` changes (default 4096). */
export function createFanoutTracker(maxPending = 4096): FanoutTracker {
  const changes = new Map<number, { since: number; left: number }>();
  return {
    handed(revision, now) {
      const change = changes.get(revision);
      if (change !== undefined) {
        change.left++;
        return;
      }
      changes.set(revision, { since: now, left: 1 });
      if (changes.size > maxPending) {
        const oldest = changes.keys().next().value as number;
        changes.delete(oldest);
      }
    },
    written(revision, now) {
      const change = changes.get(revision);
      if (change === undefined) return undefined;
      change.left--;
      if (change.left > 0) return undefined;
      changes.delete(revision);
      return now - change.since;
    },
    get pending() {
      return changes.size;
    },
  };
}
