/**
 * The embedded store: an in-memory {@link ConfigStore} with etcd's revision and
 * watch semantics, the default for one process, the sandbox and unit tests.
 *
 * The data lives in a {@link MemoryBackend} (memory-backend.ts), a tiny MVCC
 * key/value store: a global revision starting at 1 and bumped by every put,
 * delete and batch of them, a version history per key and an event log, both
 * bounded to the last `historyLimit` revisions (older ones are compacted
 * away, like etcd's auto-compaction). Several stores of different origins can
 * share one backend, like registrars sharing one etcd. The backend's names
 * are re-exported from here too, so imports from this file keep working.
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
  checkListOptions,
  createEntryDecoder,
  createPageCollector,
  encodeProjection,
  encodeWriteBatch,
  listRange,
} from "./decode-entry.js";
import {
  createMemoryBackend,
  type MemoryBackend,
  type MemoryBackendOptions,
} from "./memory-backend.js";
import { openMemoryWatch } from "./memory-watch.js";
import { DEFAULT_STORE_PREFIX, normalizePrefix, projectionKey } from "./store-key.js";

export {
  createMemoryBackend,
  DEFAULT_HISTORY_LIMIT,
  type MemoryBackend,
  type MemoryBackendOptions,
} from "./memory-backend.js";

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
  ): StoreWatch =>
    openMemoryWatch({
      backend,
      afterRevision,
      watches,
      closed: closed ? new StoreUnavailableError("the memory store is closed") : undefined,
      decode: (changes) => decoder.decodeChanges(changes, filter),
      handler,
      logger,
    });

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
