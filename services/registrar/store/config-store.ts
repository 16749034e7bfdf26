import type { ServiceConfigProjection } from "../../../gen/aether/registry/v1/projection_pb.js";

/**
 * One projection as read from the store. `origin` and `service` come from the
 * key path, and `projection.originCluster` has been re-stamped to `origin`, so
 * a value can never claim another cluster's authority.
 */
export interface StoredProjection {
  /** The origin cluster, from the key path. */
  readonly origin: string;
  /** The service (`namespace/name`), from the key path. */
  readonly service: string;
  /**
   * The decoded value, with `originCluster` equal to `origin`. A value the
   * store has decoded before (the same bytes under the same key) is decoded
   * again only when this is first read, so a reader that needs only `value`
   * and `version` pays nothing for it.
   */
  readonly projection: ServiceConfigProjection;
  /**
   * The binary encoding of `projection`: the stored bytes, or the re-stamped
   * message's encoding when the value claimed another origin or service.
   * Immutable: it may be shared with other entries and the store's own memory.
   */
  readonly value: Uint8Array;
  /** `projection.version`, readable without decoding. */
  readonly version: string;
  /** The store revision at which this value was last written. */
  readonly modRevision: number;
}

/** Selects which projections a list or watch covers. */
export interface ProjectionFilter {
  /** Only this origin's projections; undefined means every origin. */
  readonly origin?: string;
  /** Only these services; undefined or empty means every service. */
  readonly services?: ReadonlySet<string>;
}

/** Options of {@link ConfigStore.list}. */
export interface ListOptions extends ProjectionFilter {
  /**
   * Read the store as it was at this revision (for consistent pagination);
   * undefined reads the latest revision. A revision that was compacted away
   * rejects with {@link StoreCompactedError}; one in the future rejects with a
   * RangeError.
   */
  readonly revision?: number;
  /**
   * Start strictly after this position in key order (see
   * {@link ListResult.entries}); undefined starts at the beginning. A position
   * outside the listed origin's range yields the whole range (before it) or
   * nothing (after it).
   */
  readonly after?: { readonly origin: string; readonly service: string };
  /**
   * Return at most this many entries (after filtering); undefined means all.
   * A positive integer; anything else rejects with a RangeError.
   */
  readonly limit?: number;
}

/** The result of {@link ConfigStore.list}. */
export interface ListResult {
  /**
   * The entries, in store key order: the byte order of the full keys
   * (`<prefix>/clusters/<origin>/config/<base64url(service)>`), which is etcd's
   * order. Entries are grouped by origin, but origins are not in plain string
   * order when one is a prefix of another (`b-1` sorts before `b`, since `-`
   * sorts before `/`); pass the last entry back as `after` to continue.
   */
  readonly entries: StoredProjection[];
  /** The store revision the listing was read at. */
  readonly revision: number;
  /**
   * True when `limit` cut the listing short and at least one more entry
   * (one that passes the filter and decodes) follows.
   */
  readonly more: boolean;
}

/** A change observed by {@link ConfigStore.watch}. */
export type StoreEvent =
  | {
      /** A projection was created or changed. */
      readonly type: "put";
      /** The new value, origin stamped from its key. */
      readonly entry: StoredProjection;
      /** The revision of the change. */
      readonly revision: number;
    }
  | {
      /** A projection was deleted. */
      readonly type: "delete";
      /** The origin, from the key path. */
      readonly origin: string;
      /** The service, from the key path. */
      readonly service: string;
      /** The revision of the change. */
      readonly revision: number;
    };

/**
 * A guard on a write: the write happens only while the key `key` exists with
 * exactly this creation revision, checked atomically with the write (an etcd
 * transaction). A leader passes its election key, so that once its lease has
 * expired (and the key is gone, or belongs to a new campaign) nothing it
 * still tries to write can land.
 */
export interface WriteFence {
  /** The full store key that must exist (not under the projection prefix). */
  readonly key: string;
  /** The creation revision the key must have. */
  readonly createRevision: number;
}

/** Options of {@link ConfigStore.put} and {@link ConfigStore.delete}. */
export interface WriteOptions {
  /** Write only while this fence holds; undefined writes unconditionally. */
  readonly fence?: WriteFence;
}

/** One change of a {@link ConfigStore.write} batch. */
export type StoreWrite =
  | {
      /** Create or replace the own origin's projection of `projection.service`. */
      readonly type: "put";
      /** The projection; `originCluster` is stamped with the store's origin. */
      readonly projection: ServiceConfigProjection;
      /**
       * The projection's binary encoding with `version` and `originCluster`
       * empty, when the caller has it already (to compare contents): the store
       * then derives the value from it rather than encoding `projection`
       * again. It must be exactly that encoding.
       */
      readonly content?: Uint8Array;
      /**
       * Applied to the stamped value (the bytes as they would be stored)
       * just before it is written: what it returns is stored (the export
       * controller signs the value; see `services/signing/signing-key.ts`).
       */
      readonly seal?: (value: Uint8Array) => Uint8Array;
    }
  | {
      /** Delete the own origin's projection of `service` (nothing when there is none). */
      readonly type: "delete";
      /** The service (`namespace/name`). */
      readonly service: string;
    };

/**
 * The most changes one {@link ConfigStore.write} batch may carry: etcd's
 * default limit of operations in one transaction (`--max-txn-ops`).
 */
export const MAX_WRITE_BATCH = 128;

/** Callbacks of a store watch. */
export interface WatchHandler {
  /**
   * Called with every batch of changes, in revision order. Keys that are not
   * projection keys, and values that do not decode, are skipped (and counted)
   * before this is called; a batch is never empty.
   */
  onEvents(events: StoreEvent[]): void;
  /**
   * Called once when the watch cannot continue: the start revision was
   * compacted ({@link StoreCompactedError}), or the store is unreachable
   * ({@link StoreUnavailableError}). No more events follow; the caller
   * re-lists and starts a new watch.
   */
  onError(error: Error): void;
}

/** A running store watch. */
export interface StoreWatch {
  /** Stops the watch; no callback runs after the returned promise settles. */
  cancel(): Promise<void>;
}

/**
 * Counters a store reports; the registrar exports them as metrics. Each
 * counts distinct offending values since the store was created (a key at one
 * modification revision), however often they are read by lists and watches.
 */
export interface StoreCounters {
  /**
   * Values skipped because they did not decode, or decoded to the wrong
   * shape for their key (a `@mesh` record without a MeshConfig or with a
   * service's fields, a service's projection with a MeshConfig).
   */
  readonly decodeErrors: number;
  /**
   * Keys under `<prefix>/clusters/` skipped because they are not projection
   * keys (including a service segment that is neither `namespace/name` nor `@mesh`).
   */
  readonly invalidKeys: number;
  /**
   * Values whose `origin_cluster` or `service` disagreed with their key and
   * were re-stamped from it.
   */
  readonly restamped: number;
}

/**
 * The shared projection store: list, watch from a revision, and write under the
 * store's own origin only. Two implementations share this contract and one
 * test suite: `createEtcdStore` (production) and `createMemoryStore`
 * (embedded, the default).
 *
 * Every method that needs the backing store rejects with
 * {@link StoreUnavailableError} when it cannot be reached within the store's
 * request timeout, so callers can fail fast.
 */
export interface ConfigStore {
  /** `"memory"` or `"etcd"`. */
  readonly kind: "memory" | "etcd";
  /** The origin this store writes under. */
  readonly origin: string;
  /** The key prefix (default `/aether/v1`). */
  readonly prefix: string;
  /** Decode and key counters, for metrics. */
  readonly counters: StoreCounters;

  /** Lists projections, consistently at one revision. */
  list(options?: ListOptions): Promise<ListResult>;
  /** Returns the current store revision. */
  revision(): Promise<number>;
  /**
   * Writes a projection under this store's own origin, keyed by
   * `projection.service`; `originCluster` is stamped with the own origin.
   * Returns the revision of the write. Rejects with a TypeError for a service
   * that is not `namespace/name`, and with {@link FencedWriteError} (writing
   * nothing) when `options.fence` is set and no longer holds.
   */
  put(projection: ServiceConfigProjection, options?: WriteOptions): Promise<number>;
  /**
   * Deletes this store's own origin's projection of a service. Returns the
   * revision of the delete, or undefined when there was nothing to delete
   * (which, as in etcd, does not change the revision). Rejects with a
   * TypeError for a service that is not `namespace/name`, and with
   * {@link FencedWriteError} (deleting nothing) when `options.fence` is set
   * and no longer holds.
   */
  delete(service: string, options?: WriteOptions): Promise<number | undefined>;
  /**
   * Applies a batch of puts and deletes under this store's own origin
   * atomically (one etcd transaction): every change lands at one revision, or
   * none does. A delete of a service that has no projection changes nothing.
   * Resolves to the store revision after the batch (unchanged when nothing
   * changed). Watches report the changes of one batch in one `onEvents` call,
   * in the order given, all with the batch's revision.
   *
   * Rejects with a TypeError (writing nothing) when a service is not
   * `namespace/name` or appears twice, with a RangeError when there are more
   * than {@link MAX_WRITE_BATCH} changes, and with {@link FencedWriteError}
   * (writing nothing) when `options.fence` is set and no longer holds. The
   * caller keeps a batch's encoded size well under etcd's request limit
   * (1.5 MiB by default). An empty batch writes nothing and resolves to the
   * current revision.
   */
  write(changes: readonly StoreWrite[], options?: WriteOptions): Promise<number>;
  /**
   * Watches changes strictly after `afterRevision` (so a listing at revision R
   * followed by `watch(R)` misses nothing and repeats nothing). Callbacks never
   * run inside this call or inside a write; an exception thrown by a callback
   * is logged and does not end the watch. Throws a RangeError when
   * `afterRevision` is not a non-negative integer.
   */
  watch(afterRevision: number, handler: WatchHandler, filter?: ProjectionFilter): StoreWatch;
  /** Resolves when the store answers a trivial request, rejects otherwise. */
  ping(): Promise<void>;
  /**
   * Checks that the store's credentials allow what this registrar does: read
   * every key under the prefix and, with `write`, write (put and delete)
   * every key of its own origin's subtree, without changing anything.
   * Resolves when they do; rejects with {@link StorePermissionError} naming
   * what is denied, or {@link StoreUnavailableError} when the store cannot
   * be asked. Absent on a store without access control (the embedded one).
   */
  checkAccess?(options: { readonly write: boolean }): Promise<void>;
  /**
   * Releases connections; pending watches are cancelled (no more callbacks).
   * Afterwards every method rejects with {@link StoreUnavailableError}, and a
   * new watch ends with it.
   */
  close(): Promise<void>;
}

/** The backing store could not be reached (or did not answer in time). */
export class StoreUnavailableError extends Error {
  override readonly name = "StoreUnavailableError";
}

/** A requested revision is older than the store's compaction point. */
export class StoreCompactedError extends Error {
  override readonly name = "StoreCompactedError";
  /**
   * The oldest revision that can still be read. A watch can still start after
   * `compactRevision - 1` (it then receives the changes from `compactRevision`
   * on); a listing at `compactRevision` or later followed by a watch after it
   * misses nothing.
   */
  readonly compactRevision: number;
  constructor(message: string, compactRevision: number) {
    super(message);
    this.compactRevision = compactRevision;
  }
}

/**
 * A fenced write was refused because its fence no longer holds: the writer's
 * leadership has ended (its election key expired or was replaced). Nothing
 * was written. The writer must stop writing and campaign again.
 */
export class FencedWriteError extends Error {
  override readonly name = "FencedWriteError";
  /** The fence that did not hold. */
  readonly fence: WriteFence;
  constructor(message: string, fence: WriteFence) {
    super(message);
    this.fence = fence;
  }
}

/**
 * The store refused an operation for lack of permission (etcd's RBAC): the
 * registrar's etcd user or role is missing something it needs. The message
 * says what was denied and which user asked.
 */
export class StorePermissionError extends Error {
  override readonly name = "StorePermissionError";
}
