/**
 * The embedded store: an in-memory {@link ConfigStore} with etcd's revision and
 * watch semantics, the default for one process, the sandbox and unit tests.
 *
 * The data lives in a {@link MemoryBackend}, a tiny MVCC key/value store: a
 * global revision starting at 1 and bumped by every put, delete and batch of them, a version
 * history per key and an event log, both bounded to the last `historyLimit`
 * revisions (older ones are compacted away, like etcd's auto-compaction).
 * Several stores of different origins can share one backend, like registrars
 * sharing one etcd.
 */
import type { ServiceConfigProjection } from "../../../gen/aether/registry/v1/projection_pb.js";
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import {
  type ConfigStore,
  FencedWriteError,
  type ListOptions,
  type ListResult,
  type ProjectionFilter,
  StoreCompactedError,
  StoreUnavailableError,
  type StoreWatch,
  type StoreWrite,
  type WatchHandler,
  type WriteFence,
  type WriteOptions,
} from "./config-store.js";
import {
  assertServiceKey,
  callHandler,
  checkListOptions,
  checkWatchRevision,
  compareKeys,
  createEntryDecoder,
  createPageCollector,
  encodeProjection,
  encodeWriteBatch,
  listRange,
  type RawChange,
  type RawEntry,
} from "./decode-entry.js";
import { DEFAULT_STORE_PREFIX, normalizePrefix, projectionKey } from "./store-key.js";

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

interface Version {
  readonly modRevision: number;
  /** The revision the key was created at (for a tombstone, the revision of the delete). */
  readonly createRevision: number;
  /** Undefined for a deletion (a tombstone). */
  readonly value: Uint8Array | undefined;
}

/** Creates an empty memory backend at revision 1. */
export function createMemoryBackend(options: MemoryBackendOptions = {}): MemoryBackend {
  const historyLimit = options.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  if (!(Number.isSafeInteger(historyLimit) && historyLimit > 0)) {
    throw new RangeError(`historyLimit must be a positive integer, got ${historyLimit}`);
  }
  let revision = 1;
  let compactRevision = 1;
  const histories = new Map<string, Version[]>();
  /** Every key of `histories`, in key order. */
  const keys: string[] = [];
  /**
   * The retained changes are `log[head..]`: every change with a revision at or
   * after compactRevision, in revision order (one or more per revision: a
   * batch writes several at one revision). Dropped entries are sliced off in
   * bulk.
   */
  let log: RawChange[] = [];
  let head = 0;
  const listeners = new Set<(change: RawChange) => void>();

  /** The index in `log` of the first retained change with a revision above `afterRevision`. */
  const logIndexAfter = (afterRevision: number): number => {
    let low = head;
    let high = log.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((log[mid] as RawChange).revision <= afterRevision) low = mid + 1;
      else high = mid;
    }
    return low;
  };

  /** Drops the versions of `key` that no read at `oldest` or later can see. */
  const prune = (key: string, oldest: number): void => {
    const versions = histories.get(key);
    if (versions === undefined) return;
    let visible = -1;
    for (let i = versions.length - 1; i >= 0; i--) {
      if ((versions[i] as Version).modRevision <= oldest) {
        visible = i;
        break;
      }
    }
    if (visible < 0) return;
    const keepFrom = (versions[visible] as Version).value === undefined ? visible + 1 : visible;
    versions.splice(0, keepFrom);
    if (versions.length === 0) {
      histories.delete(key);
      keys.splice(lowerBound(keys, key), 1);
    }
  };

  const compact = (target: number): void => {
    if (!Number.isSafeInteger(target)) throw new RangeError(`invalid revision ${target}`);
    if (target > revision) {
      throw new RangeError(`cannot compact to ${target}, a future revision (current ${revision})`);
    }
    if (target <= compactRevision) return;
    const end = logIndexAfter(target - 1);
    const dropped = new Set<string>();
    for (let i = head; i < end; i++) dropped.add((log[i] as RawChange).key);
    head = end;
    if (head > 1_024 && head * 2 > log.length) {
      log = log.slice(head);
      head = 0;
    }
    compactRevision = target;
    for (const key of dropped) prune(key, target);
  };

  /** Records one change at `revision` (already bumped), without compacting or telling listeners. */
  const record = (change: RawChange, value: Uint8Array | undefined): void => {
    let versions = histories.get(change.key);
    if (versions === undefined) {
      versions = [];
      histories.set(change.key, versions);
      keys.splice(lowerBound(keys, change.key), 0, change.key);
    }
    const previous = versions[versions.length - 1];
    const createRevision =
      previous?.value !== undefined && value !== undefined
        ? previous.createRevision
        : change.revision;
    versions.push({ modRevision: change.revision, createRevision, value });
    log.push(change);
  };

  /** Reports whether `key` exists now. */
  const exists = (key: string): boolean => {
    const versions = histories.get(key);
    return versions !== undefined && versions[versions.length - 1]?.value !== undefined;
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
    const effective = changes.filter(({ key, value }) => value !== undefined || exists(key));
    if (effective.length === 0) return undefined;
    revision++;
    const recorded: RawChange[] = [];
    for (const { key, value } of effective) {
      const change: RawChange =
        value === undefined
          ? { type: "delete", key, revision }
          : { type: "put", key, value: Uint8Array.from(value), revision };
      record(change, change.type === "put" ? change.value : undefined);
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
    createRevisionOf(key) {
      const versions = histories.get(key);
      const last = versions?.[versions.length - 1];
      return last?.value === undefined ? undefined : last.createRevision;
    },
    compact,
    *entriesAt(at, keyPrefix, startKey, startExclusive) {
      // A snapshot of the key list, so writes during iteration cannot shift it.
      const ordered = keys.slice(lowerBound(keys, startKey));
      for (const key of ordered) {
        // Keys with one prefix are contiguous in key order, and startKey >= keyPrefix.
        if (!key.startsWith(keyPrefix)) return;
        if (startExclusive && key === startKey) continue;
        const versions = histories.get(key) ?? [];
        for (let v = versions.length - 1; v >= 0; v--) {
          const version = versions[v] as Version;
          if (version.modRevision > at) continue;
          if (version.value !== undefined) {
            yield { key, value: version.value, modRevision: version.modRevision };
          }
          break;
        }
      }
    },
    changesAfter(afterRevision) {
      return log.slice(logIndexAfter(afterRevision));
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  };
}

/** Returns the index of the first of the ordered `keys` at or after `key`. */
function lowerBound(keys: readonly string[], key: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (compareKeys(keys[mid] as string, key) < 0) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /** The origin (cluster name) this store writes under. */
  readonly origin: string;
  /** The key prefix; default `/aether/v1`. */
  readonly prefix?: string;
  /** Where skipped keys and values are reported; default silent. */
  readonly logger?: Logger;
  /**
   * The history limit of the backend this store creates (see
   * {@link MemoryBackendOptions.historyLimit}). Not allowed together with
   * `backend`, whose own limit applies.
   */
  readonly historyLimit?: number;
  /**
   * The backend to share with other stores (for example of other origins);
   * default a new one of its own.
   */
  readonly backend?: MemoryBackend;
}

/** The embedded {@link ConfigStore}, with test hooks to write raw data. */
export interface MemoryConfigStore extends ConfigStore {
  readonly kind: "memory";
  /** The backend this store reads and writes. */
  readonly backend: MemoryBackend;
  /**
   * Writes raw bytes under any key, bypassing validation and stamping, and
   * returns the revision: the test hook for foreign-origin and corrupt values.
   */
  putRaw(key: string, value: Uint8Array): number;
}

/**
 * Creates an embedded store. Its reads, writes and watches follow the
 * {@link ConfigStore} contract exactly as the etcd store does; watch callbacks
 * always run asynchronously (in a microtask), never inside `put` or `delete`.
 * After `close()`, every method rejects with {@link StoreUnavailableError}.
 */
export function createMemoryStore(options: MemoryStoreOptions): MemoryConfigStore {
  if (options.backend !== undefined && options.historyLimit !== undefined) {
    throw new TypeError("historyLimit cannot be set together with a shared backend");
  }
  const origin = options.origin;
  const prefix = normalizePrefix(options.prefix ?? DEFAULT_STORE_PREFIX);
  const logger = options.logger ?? createSilentLogger();
  const backend =
    options.backend ??
    createMemoryBackend(
      options.historyLimit === undefined ? {} : { historyLimit: options.historyLimit },
    );
  const decoder = createEntryDecoder({ prefix, logger });
  const watches = new Set<() => void>();
  let closed = false;

  const checkOpen = (): void => {
    if (closed) throw new StoreUnavailableError("the memory store is closed");
  };

  /** Throws {@link FencedWriteError} unless `fence` is undefined or holds now. */
  const checkFence = (fence: WriteFence | undefined): void => {
    if (fence === undefined) return;
    const current = backend.createRevisionOf(fence.key);
    if (current !== fence.createRevision) {
      throw new FencedWriteError(
        `fenced write refused: ${fence.key} ${current === undefined ? "does not exist" : `was created at revision ${current}`}, not ${fence.createRevision}`,
        fence,
      );
    }
  };

  const compacted = (revision: number): StoreCompactedError =>
    new StoreCompactedError(
      `revision ${revision} has been compacted (oldest readable: ${backend.compactRevision})`,
      backend.compactRevision,
    );

  const list = async (listOptions: ListOptions = {}): Promise<ListResult> => {
    checkOpen();
    checkListOptions(listOptions);
    const current = backend.revision;
    const at = listOptions.revision ?? current;
    if (at > current) {
      throw new RangeError(`revision ${at} is in the future (current ${current})`);
    }
    if (at < backend.compactRevision) throw compacted(at);
    const range = listRange(prefix, listOptions);
    const page = createPageCollector(decoder, listOptions, listOptions.limit);
    for (const raw of backend.entriesAt(
      at,
      range.keyPrefix,
      range.startKey,
      range.startExclusive,
    )) {
      if (!page.offer(raw)) break;
    }
    return { ...page.result(), revision: at };
  };

  const watch = (
    afterRevision: number,
    handler: WatchHandler,
    filter: ProjectionFilter = {},
  ): StoreWatch => {
    checkWatchRevision(afterRevision);
    let active = true;
    let queue: RawChange[] = [];
    let scheduled = false;
    let unsubscribe = (): void => {};

    const stop = (): void => {
      active = false;
      unsubscribe();
      watches.delete(stop);
    };
    const fail = (error: Error): void => {
      stop();
      queueMicrotask(() => callHandler(logger, () => handler.onError(error)));
    };
    const flush = (): void => {
      scheduled = false;
      if (!active) return;
      const changes = queue;
      queue = [];
      const events = decoder.decodeChanges(changes, filter);
      if (events.length > 0) callHandler(logger, () => handler.onEvents(events));
    };
    const enqueue = (changes: RawChange[]): void => {
      queue.push(...changes);
      if (!scheduled && queue.length > 0) {
        scheduled = true;
        queueMicrotask(flush);
      }
    };

    watches.add(stop);
    if (closed) {
      fail(new StoreUnavailableError("the memory store is closed"));
    } else if (afterRevision < backend.compactRevision - 1) {
      fail(compacted(afterRevision + 1));
    } else {
      enqueue(backend.changesAfter(afterRevision));
      unsubscribe = backend.subscribe((change) => enqueue([change]));
    }
    return {
      cancel: async () => stop(),
    };
  };

  return {
    kind: "memory",
    origin,
    prefix,
    counters: decoder.counters,
    backend,
    list,
    revision: async () => {
      checkOpen();
      return backend.revision;
    },
    put: async (projection: ServiceConfigProjection, writeOptions?: WriteOptions) => {
      checkOpen();
      const value = encodeProjection(projection, origin);
      checkFence(writeOptions?.fence);
      return backend.put(projectionKey(prefix, origin, projection.service), value);
    },
    delete: async (service: string, writeOptions?: WriteOptions) => {
      checkOpen();
      assertServiceKey(service);
      checkFence(writeOptions?.fence);
      return backend.delete(projectionKey(prefix, origin, service));
    },
    write: async (changes: readonly StoreWrite[], writeOptions?: WriteOptions) => {
      checkOpen();
      const encoded = encodeWriteBatch(prefix, origin, changes, decoder);
      checkFence(writeOptions?.fence);
      return backend.write(encoded) ?? backend.revision;
    },
    watch,
    ping: async () => checkOpen(),
    close: async () => {
      closed = true;
      for (const stop of [...watches]) stop();
    },
    putRaw: (key, value) => backend.put(key, value),
  };
}
