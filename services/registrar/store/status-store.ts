/**
 * The store of published import status (see `services/common/status-layout.ts`):
 * every cluster's `<prefix>/clusters/<cluster>/status/<replica>/...` values,
 * listed and watched raw beside the projections, and written by this
 * registrar under its own cluster only. Two implementations share this
 * contract and one test suite: `status-store-memory.ts` (over a shared
 * {@link MemoryBackend}) and `status-store-etcd.ts`. This file holds the
 * contract and what both implementations share: the decoding of keys and
 * values (anything else skipped, a value that does not decode counted) and
 * the check of a write batch.
 */
import { fromBinary } from "@bufbuild/protobuf";
import {
  type ImportStatusReplica,
  ImportStatusReplicaSchema,
  type ServiceImportStatus,
  ServiceImportStatusSchema,
} from "../../../gen/aether/registry/v1/fleet_pb.js";
import { parseStatusKey, type StatusKey } from "../../common/status-layout.js";
import type { Logger } from "../../runtime/logger.js";
import { MAX_WRITE_BATCH, type StoreWatch } from "./config-store.js";
import type { RawChange, RawEntry } from "./decode-entry.js";

/** One decoded status value: a replica's header or its status of one service. */
export type StatusEntry =
  | {
      readonly kind: "replica";
      readonly cluster: string;
      readonly replica: string;
      /** The header, as stored (its own `cluster` and `replica` are not trusted). */
      readonly header: ImportStatusReplica;
      /** The store revision at which it was written. */
      readonly modRevision: number;
    }
  | {
      readonly kind: "service";
      readonly cluster: string;
      readonly replica: string;
      readonly service: string;
      /** The value, as stored (its own `service` is not trusted). */
      readonly status: ServiceImportStatus;
      /** The store revision at which it was written. */
      readonly modRevision: number;
    };

/** A change of published status. */
export type StatusEvent =
  | { readonly type: "put"; readonly entry: StatusEntry; readonly revision: number }
  | { readonly type: "delete"; readonly key: StatusKey; readonly revision: number };

/** Callbacks of a status watch (the {@link WatchHandler} of projections, for status). */
export interface StatusWatchHandler {
  /** Every non-empty batch of changes of status keys, in revision order. */
  onEvents(events: StatusEvent[]): void;
  /**
   * Called once when the watch cannot continue (compacted start revision,
   * unreachable store); no more events follow; the caller re-lists.
   */
  onError(error: Error): void;
}

/** One change of a {@link StatusStore.write} batch: a full status key of the own cluster. */
export type StatusWrite =
  | { readonly type: "put"; readonly key: string; readonly value: Uint8Array }
  | { readonly type: "delete"; readonly key: string };

/** Counters of a status store, for metrics. */
export interface StatusStoreCounters {
  /** Status values skipped because they did not decode (each key at one revision once). */
  readonly invalidValues: number;
}

/**
 * Published import status in the shared store. Every method that needs the
 * backing store rejects with `StoreUnavailableError` when it cannot reach it.
 */
export interface StatusStore {
  /** `"memory"` or `"etcd"`. */
  readonly kind: "memory" | "etcd";
  /** The cluster this store writes under. */
  readonly cluster: string;
  /** The normalized key prefix. */
  readonly prefix: string;
  /** Decode counters. */
  readonly counters: StatusStoreCounters;
  /**
   * Lists the status values of `cluster` (every cluster when undefined) at
   * the latest revision: keys `parseStatusKey` refuses are skipped silently,
   * values that do not decode are skipped and counted.
   */
  list(cluster?: string): Promise<{ readonly entries: StatusEntry[]; readonly revision: number }>;
  /**
   * Watches every cluster's status changes strictly after `afterRevision`;
   * callbacks never run inside this call. A compacted start revision ends
   * the watch with `StoreCompactedError` (the caller re-lists).
   */
  watch(afterRevision: number, handler: StatusWatchHandler): StoreWatch;
  /**
   * Applies puts and deletes of status keys of this store's own cluster
   * atomically; resolves to the revision after the batch. Rejects, writing
   * nothing, with a TypeError for a key that is not such a status key or
   * appears twice, and with a RangeError for more than
   * {@link MAX_WRITE_BATCH} changes.
   */
  write(changes: readonly StatusWrite[]): Promise<number>;
  /** Stops every watch; afterwards every method rejects. */
  close(): Promise<void>;
}

/** How many bad values a decoder remembers to count each once. */
const MAX_REMEMBERED = 10_000;

/** The decoder shared by both status stores: skips foreign keys, counts bad values. */
export interface StatusDecoder {
  readonly counters: StatusStoreCounters;
  /** The decoded entry, or undefined (a skipped key or a counted bad value). */
  entry(raw: RawEntry): StatusEntry | undefined;
  /** The status events among `changes`, in order. */
  events(changes: readonly RawChange[]): StatusEvent[];
}

/** Creates the decoder of one status store over `prefix`; bad values are logged at warn. */
export function createStatusDecoder(prefix: string, logger: Logger): StatusDecoder {
  let invalidValues = 0;
  /** The bad values counted already (key and revision), so a list and a watch count one once. */
  const counted = new Set<string>();
  const entry = (raw: RawEntry): StatusEntry | undefined => {
    const key = parseStatusKey(prefix, raw.key);
    if (key === undefined) return undefined;
    try {
      if (key.kind === "replica") {
        const header = fromBinary(ImportStatusReplicaSchema, raw.value);
        return { ...key, header, modRevision: raw.modRevision };
      }
      const status = fromBinary(ServiceImportStatusSchema, raw.value);
      return { ...key, status, modRevision: raw.modRevision };
    } catch (error) {
      const id = `${raw.modRevision} ${raw.key}`;
      if (counted.has(id)) return undefined;
      if (counted.size >= MAX_REMEMBERED) counted.clear();
      counted.add(id);
      invalidValues++;
      logger.warn(
        { key: raw.key, modRevision: raw.modRevision, err: error },
        "skipping a published status value that does not decode",
      );
      return undefined;
    }
  };
  return {
    counters: {
      get invalidValues() {
        return invalidValues;
      },
    },
    entry,
    events(changes) {
      const events: StatusEvent[] = [];
      for (const change of changes) {
        if (change.type === "delete") {
          const key = parseStatusKey(prefix, change.key);
          if (key !== undefined) events.push({ type: "delete", key, revision: change.revision });
          continue;
        }
        const decoded = entry({
          key: change.key,
          value: change.value,
          modRevision: change.revision,
        });
        if (decoded !== undefined) {
          events.push({ type: "put", entry: decoded, revision: change.revision });
        }
      }
      return events;
    },
  };
}

/**
 * Checks a write batch of the store of `cluster`: at most
 * {@link MAX_WRITE_BATCH} changes (RangeError), each a status key of
 * `cluster` (any replica: a replica deletes its own cluster's stale ones)
 * at most once (TypeError).
 */
export function checkStatusWrites(
  prefix: string,
  cluster: string,
  changes: readonly StatusWrite[],
): void {
  if (changes.length > MAX_WRITE_BATCH) {
    throw new RangeError(
      `a status write carries at most ${MAX_WRITE_BATCH} changes, got ${changes.length}`,
    );
  }
  const seen = new Set<string>();
  for (const { key } of changes) {
    if (parseStatusKey(prefix, key)?.cluster !== cluster) {
      throw new TypeError(`${JSON.stringify(key)} is not a status key of cluster ${cluster}`);
    }
    if (seen.has(key)) throw new TypeError(`status key ${key} appears twice in one write`);
    seen.add(key);
  }
}
