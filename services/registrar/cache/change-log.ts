/**
 * The config cache's change log: a bounded history of recent change records,
 * in revision order, from which a watch stream that resumes at a revision is
 * replayed instead of sent a whole snapshot. Synchronous and timer-free; the
 * cache (`config-cache.ts`) appends what it publishes and asks it what a
 * resuming subscriber must be sent.
 */
import type { CacheEvent, CacheView, ChangeRecord } from "./projection-index.js";

/** Which events of the records a reader sees (a subscriber's options). */
export interface EventFilter {
  /** Only these services; undefined or empty means every service. */
  readonly services?: ReadonlySet<string>;
  /** Which view: the raw changes, or the changes of each service's winner. */
  readonly view: CacheView;
}

/** Options of {@link createChangeLog}. */
export interface ChangeLogOptions {
  /**
   * How many records the log keeps at least (when it has seen that many); it
   * holds up to twice as many before trimming back to about this many.
   */
  readonly limit: number;
}

/** The change log; see the module comment. */
export interface ChangeLog {
  /**
   * Every change after this revision is in the log (0 until the log is
   * started): a subscriber that resumes at or above it can be replayed.
   */
  readonly replayFrom: number;
  /** How many records the log holds. */
  readonly size: number;
  /**
   * Starts the log afresh at a listing's `revision`: it forgets what it
   * held, and every change after `revision` will be remembered.
   * `atRevision` are the listing's records written at `revision` itself;
   * they are kept only when there are several (a batched write a resuming
   * client may have seen part of; see {@link ChangeLog.recordsToReplay}).
   */
  restart(revision: number, atRevision: readonly ChangeRecord[]): void;
  /**
   * Appends records (in revision order, none older than the last held) and,
   * once the log holds more than twice its limit, trims it to about the
   * limit. A trim never splits a revision: the records of one revision (a
   * batched write, a re-list) are kept or dropped together, so a replay from
   * a revision in the log can always send all of it. `replayFrom` moves up
   * to the last dropped revision.
   */
  remember(records: readonly ChangeRecord[]): void;
  /**
   * Whether a subscriber that applied every change up to `resume` can be
   * replayed when the cache is at `currentRevision`: `resume` is positive,
   * not before `replayFrom` and not after `currentRevision`.
   */
  canReplay(resume: number, currentRevision: number): boolean;
  /**
   * The records a subscriber resuming after `resume` must apply: every
   * record after it, and also the records of `resume` itself when that
   * revision holds several (a batched write or a re-list). A client resumes
   * from the revision of the last event it applied, and a stream may have
   * ended between two events of one revision; sending the whole revision
   * again is harmless, since applying an upsert or a delete twice changes
   * nothing. Meaningful only when {@link ChangeLog.canReplay} says so.
   */
  recordsToReplay(resume: number): ChangeRecord[];
  /**
   * Makes every resume at or before `revision` a snapshot: the log forgets
   * what it holds and `replayFrom` moves past `revision`. For changes
   * published at a revision subscribers may already have reached (the
   * deletes of a released hold, at the current revision): a replay could
   * not tell which of them a resuming subscriber saw.
   */
  seal(revision: number): void;
}

/** The index of the first record with a revision at or above `revision` (records are in revision order). */
function lowerBoundRevision(records: readonly ChangeRecord[], revision: number): number {
  let low = 0;
  let high = records.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((records[mid] as ChangeRecord).revision < revision) low = mid + 1;
    else high = mid;
  }
  return low;
}

/**
 * The events of `records` a reader with `filter` sees, in record order: the
 * raw event (view `all`) or the effective one (view `effective`, skipped
 * when the winner did not change), of the filter's services only.
 */
export function eventsFor(records: readonly ChangeRecord[], filter: EventFilter): CacheEvent[] {
  const { services, view } = filter;
  const every = services === undefined || services.size === 0;
  const out: CacheEvent[] = [];
  for (const record of records) {
    const event = view === "all" ? record.raw : record.effective;
    if (event !== undefined && (every || services.has(event.service))) out.push(event);
  }
  return out;
}

/** Creates an empty change log (`replayFrom` 0) keeping about `options.limit` records. */
export function createChangeLog(options: ChangeLogOptions): ChangeLog {
  const { limit } = options;
  let history: ChangeRecord[] = [];
  let replayFrom = 0;

  function remember(records: readonly ChangeRecord[]): void {
    // One at a time: a re-list may carry more records than a call takes arguments.
    for (const record of records) history.push(record);
    if (history.length > limit * 2) {
      let dropped = history.length - limit;
      const kept = (history[dropped] as ChangeRecord).revision;
      while (dropped > 0 && (history[dropped - 1] as ChangeRecord).revision === kept) dropped--;
      if (dropped === 0) return;
      replayFrom = Math.max(replayFrom, (history[dropped - 1] as ChangeRecord).revision);
      history = history.slice(dropped);
    }
  }

  return {
    get replayFrom() {
      return replayFrom;
    },
    get size() {
      return history.length;
    },
    restart(revision, atRevision) {
      history = [];
      replayFrom = revision;
      remember(atRevision.length < 2 ? [] : atRevision);
    },
    remember,
    canReplay(resume, currentRevision) {
      return resume > 0 && resume >= replayFrom && resume <= currentRevision;
    },
    seal(revision) {
      history = history.filter((record) => record.revision > revision);
      replayFrom = Math.max(replayFrom, revision + 1);
    },
    recordsToReplay(resume) {
      let start = lowerBoundRevision(history, resume);
      const atResume = lowerBoundRevision(history, resume + 1) - start;
      if (atResume < 2) start += atResume;
      return history.slice(start);
    },
  };
}
