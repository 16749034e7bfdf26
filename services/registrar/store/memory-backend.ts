/**
 * The data of the embedded store (memory-store.ts): a {@link MemoryBackend},
 * a tiny MVCC key/value store: a global revision starting at 1 and bumped by
 * every put, delete and batch of them, a version history per key
 * (memory-key-history.ts) and an event log (memory-change-log.ts), both
 * bounded to the last `historyLimit` revisions (older ones are compacted
 * away, like etcd's auto-compaction). Several stores of different origins
 * can share one backend, like registrars sharing one etcd.
 */
import type { RawChange, RawEntry } from "./decode-entry.js";
import { createChangeLog } from "./memory-change-log.js";
import { createKeyHistory } from "./memory-key-history.js";

/** The default number of revisions a memory backend keeps readable. */
export const DEFAULT_HISTORY_LIMIT = 10_000;

/** Options of {@link createMemoryBackend}. */
export interface MemoryBackendOptions {
  /**
   * How many revisions stay readable and watchable: after a write at revision
   * N, revisions below `N - historyLimit + 1` are compacted. Default
   * {@link DEFAULT_HISTORY_LIMIT}; must be a positive integer.
   */
  readonly historyLimit?: number;
}

/**
 * The shared data of one or more memory stores: an MVCC key/value map with
 * etcd's revision rules. Writes never call listeners synchronously in a way
 * that can re-enter the backend; stores deliver events asynchronously.
 */
export interface MemoryBackend {
  /** The current revision: 1 when empty, plus one per put, effective delete and effective batch. */
  readonly revision: number;
  /** The oldest revision that can still be read (and watched from, exclusive of `compactRevision - 1`). */
  readonly compactRevision: number;
  /** The configured history limit. */
  readonly historyLimit: number;
  /** Writes `value` under `key` (any key, any bytes) and returns the new revision. */
  put(key: string, value: Uint8Array): number;
  /** Deletes `key` and returns the new revision, or undefined when it did not exist. */
  delete(key: string): number | undefined;
  /**
   * Applies several puts (`value` set) and deletes (`value` undefined) of
   * distinct keys atomically at one new revision, in order, like an etcd
   * transaction. Deletes of keys that do not exist change nothing; returns
   * the new revision, or undefined when nothing changed.
   */
  write(
    changes: readonly { readonly key: string; readonly value: Uint8Array | undefined }[],
  ): number | undefined;
  /**
   * Returns the revision at which `key` was created (its first put since it
   * last did not exist, like etcd's `create_revision`), or undefined when it
   * does not exist now.
   */
  createRevisionOf(key: string): number | undefined;
  /**
   * Compacts history so that `revision` becomes the oldest readable one, like
   * etcd's compact. Throws a RangeError for a future revision; compacting to
   * an already compacted revision does nothing.
   */
  compact(revision: number): void;
  /**
   * Returns the entries live at `revision`, in key order, whose keys start
   * with `keyPrefix`, starting at `startKey` (excluded when `startExclusive`).
   * The caller has checked that `revision` is readable.
   */
  entriesAt(
    revision: number,
    keyPrefix: string,
    startKey: string,
    startExclusive: boolean,
  ): Iterable<RawEntry>;
  /**
   * Returns every retained change with a revision above `afterRevision`, in
   * order. The caller has checked that `afterRevision >= compactRevision - 1`.
   */
  changesAfter(afterRevision: number): RawChange[];
  /**
   * Calls `listener` synchronously with every later change; returns the
   * function that stops it. Listeners must only queue, never write.
   */
  subscribe(listener: (change: RawChange) => void): () => void;
}

/** Creates an empty memory backend at revision 1. */
export function createMemoryBackend(options: MemoryBackendOptions = {}): MemoryBackend {
  const historyLimit = options.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  if (!(Number.isSafeInteger(historyLimit) && historyLimit > 0)) {
    throw new RangeError(`historyLimit must be a positive integer, got ${historyLimit}`);
  }
  let revision = 1;
  let compactRevision = 1;
  const history = createKeyHistory();
  /** Every change with a revision at or after compactRevision. */
  const log = createChangeLog();
  const listeners = new Set<(change: RawChange) => void>();

  const compact = (target: number): void => {
    if (!Number.isSafeInteger(target)) throw new RangeError(`invalid revision ${target}`);
    if (target > revision) {
      throw new RangeError(`cannot compact to ${target}, a future revision (current ${revision})`);
    }
    if (target <= compactRevision) return;
    const dropped = log.dropBefore(target);
    compactRevision = target;
    for (const key of dropped) history.prune(key, target);
  };

  /** Records one change at `revision` (already bumped), without compacting or telling listeners. */
  const record = (change: RawChange): void => {
    history.record(change.key, change.revision, change.type === "put" ? change.value : undefined);
    log.append(change);
  };

  /** Compacts to the history limit and tells listeners about `changes`, all at the current revision. */
  const commit = (changes: readonly RawChange[]): number => {
    compact(revision - historyLimit + 1);
    for (const change of changes) for (const listener of listeners) listener(change);
    return revision;
  };

  const write: MemoryBackend["write"] = (changes) => {
    const seen = new Set<string>();
    for (const { key } of changes) {
      if (seen.has(key)) throw new TypeError(`key ${key} appears twice in one write`);
      seen.add(key);
    }
    const effective = changes.filter(
      ({ key, value }) => value !== undefined || history.exists(key),
    );
    if (effective.length === 0) return undefined;
    revision++;
    const recorded: RawChange[] = [];
    for (const { key, value } of effective) {
      const change: RawChange =
        value === undefined
          ? { type: "delete", key, revision }
          : { type: "put", key, value: Uint8Array.from(value), revision };
      record(change);
      recorded.push(change);
    }
    return commit(recorded);
  };

  return {
    get revision() {
      return revision;
    },
    get compactRevision() {
      return compactRevision;
    },
    historyLimit,
    put: (key, value) => write([{ key, value }]) as number,
    delete: (key) => write([{ key, value: undefined }]),
    write,
    createRevisionOf: (key) => history.createRevisionOf(key),
    compact,
    entriesAt: (at, keyPrefix, startKey, startExclusive) =>
      history.entriesAt(at, keyPrefix, startKey, startExclusive),
    changesAfter: (afterRevision) => log.changesAfter(afterRevision),
    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  };
}
