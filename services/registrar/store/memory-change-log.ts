/**
 * The event log of a memory backend (memory-backend.ts): every retained
 * change in revision order, so that a watch can start from any revision
 * still retained. Compaction drops the oldest changes.
 */
import type { RawChange } from "./decode-entry.js";

/** The retained changes of a memory backend; see {@link createChangeLog}. */
export interface ChangeLog {
  /** Appends `change`, whose revision is at least that of every retained change. */
  append(change: RawChange): void;
  /** Returns every retained change with a revision above `afterRevision`, in order, as a new array. */
  changesAfter(afterRevision: number): RawChange[];
  /**
   * Drops every retained change with a revision below `oldest` and returns
   * the keys those changes touched (whose histories may now be pruned).
   */
  dropBefore(oldest: number): Set<string>;
}

/** Creates an empty change log. */
export function createChangeLog(): ChangeLog {
  /**
   * The retained changes are `log[head..]`: every change with a revision at or
   * after the backend's compactRevision, in revision order (one or more per
   * revision: a batch writes several at one revision). Dropped entries are
   * sliced off in bulk.
   */
  let log: RawChange[] = [];
  let head = 0;

  /** The index in `log` of the first retained change with a revision above `afterRevision`. */
  const indexAfter = (afterRevision: number): number => {
    let low = head;
    let high = log.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((log[mid] as RawChange).revision <= afterRevision) low = mid + 1;
      else high = mid;
    }
    return low;
  };

  return {
    append(change) {
      log.push(change);
    },
    changesAfter(afterRevision) {
      return log.slice(indexAfter(afterRevision));
    },
    dropBefore(oldest) {
      const end = indexAfter(oldest - 1);
      const dropped = new Set<string>();
      for (let i = head; i < end; i++) dropped.add((log[i] as RawChange).key);
      head = end;
      if (head > 1_024 && head * 2 > log.length) {
        log = log.slice(head);
        head = 0;
      }
      return dropped;
    },
  };
}
