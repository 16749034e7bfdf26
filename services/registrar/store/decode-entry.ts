/**
 * The read side both store implementations share: turning raw key/value pairs
 * into stamped {@link StoredProjection}s and {@link StoreEvent}s, skipping and
 * counting what does not parse, and paging through a key range. Keeping it in
 * one place is what makes the etcd and the embedded store behave alike.
 */

import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../../gen/aether/registry/v1/projection_pb.js";
import { checkServiceName } from "../../common/service-name.js";
import type { Logger } from "../logger.js";
import type {
  ListOptions,
  ProjectionFilter,
  StoreCounters,
  StoredProjection,
  StoreEvent,
} from "./config-store.js";
import {
  allOriginsKeyPrefix,
  originKeyPrefix,
  type ProjectionKeyParts,
  parseProjectionKey,
  projectionKey,
} from "./store-key.js";

/** A key and its value as the backing store holds them. */
export interface RawEntry {
  /** The full store key. */
  readonly key: string;
  /** The stored bytes (the protobuf binary encoding of a projection, if well-formed). */
  readonly value: Uint8Array;
  /** The revision at which the value was written. */
  readonly modRevision: number;
}

/** A change as the backing store reports it. */
export type RawChange =
  | {
      readonly type: "put";
      readonly key: string;
      readonly value: Uint8Array;
      readonly revision: number;
    }
  | { readonly type: "delete"; readonly key: string; readonly revision: number };

/**
 * Decodes raw entries and changes for one store. Every method skips what it
 * cannot trust instead of throwing, logs it once and counts it.
 */
export interface EntryDecoder {
  /**
   * The live counters. Each counts distinct offending values (a key at a
   * modification revision), so reading the same value again does not inflate
   * them.
   */
  readonly counters: StoreCounters;
  /**
   * Returns the stamped entry for a raw entry, or undefined when its key is
   * not a projection key (counted in `invalidKeys`), it does not pass
   * `filter`, or its value does not decode (counted in `decodeErrors`).
   */
  decodeEntry(raw: RawEntry, filter?: ProjectionFilter): StoredProjection | undefined;
  /**
   * Returns the store events for raw changes, in order, skipping the ones
   * {@link EntryDecoder.decodeEntry} would skip (a delete has no value, so
   * only its key is checked).
   */
  decodeChanges(changes: readonly RawChange[], filter?: ProjectionFilter): StoreEvent[];
}

/** Options of {@link createEntryDecoder}. */
export interface EntryDecoderOptions {
  /** The normalized store prefix keys are parsed under. */
  readonly prefix: string;
  /** Where skipped keys and values are reported, once each, at warn level. */
  readonly logger: Logger;
  /**
   * How many distinct offending values are remembered for de-duplication
   * before the memory is cleared (and they may be counted again); default 10000.
   */
  readonly memory?: number;
}

const SERVICE = /^[^/]+\/[^/]+$/;

/** Reports whether `service` has the shape `namespace/name`: two non-empty parts, one slash. */
export function isServiceKey(service: string): boolean {
  return SERVICE.test(service);
}

/**
 * Throws a TypeError unless `service` is `namespace/name` with both parts
 * DNS-1123 labels: writers are strict, so that everything written is
 * importable (readers are lenient, see {@link isServiceKey}, and leave the
 * verdict on odd names to the import policy, which reports it).
 */
export function assertServiceKey(service: string): void {
  const problem = checkServiceName(service);
  if (problem !== undefined) throw new TypeError(problem);
}

/**
 * Returns the bytes a store writes for `projection` under `origin`: its
 * protobuf binary encoding with `originCluster` set to `origin`. The caller's
 * message is not modified. Throws a TypeError when `projection.service` is not
 * `namespace/name`.
 */
export function encodeProjection(projection: ServiceConfigProjection, origin: string): Uint8Array {
  assertServiceKey(projection.service);
  return toBinary(ServiceConfigProjectionSchema, { ...projection, originCluster: origin });
}

/** Reports whether a projection with these key parts passes `filter`. */
export function matchesFilter(parts: ProjectionKeyParts, filter: ProjectionFilter = {}): boolean {
  if (filter.origin !== undefined && parts.origin !== filter.origin) return false;
  const services = filter.services;
  return services === undefined || services.size === 0 || services.has(parts.service);
}

/**
 * Reports whether `key` lies under `<prefix>/clusters/<origin>/<kind>/` for a
 * kind other than `config`: data of another registry sharing the prefix,
 * which config readers ignore without counting it as an invalid key.
 */
export function isOtherSubtree(prefix: string, key: string): boolean {
  const base = `${prefix}/clusters/`;
  if (!key.startsWith(base)) return false;
  const segments = key.slice(base.length).split("/");
  return segments.length >= 3 && segments[0] !== "" && segments[1] !== "config";
}

/**
 * Creates the decoder of one store. The origin and service of every entry come
 * from its key; a value whose `originCluster` or `service` disagrees is
 * re-stamped from the key and counted in `restamped`.
 */
export function createEntryDecoder(options: EntryDecoderOptions): EntryDecoder {
  const { prefix, logger } = options;
  const memory = options.memory ?? 10_000;
  const counters = { decodeErrors: 0, invalidKeys: 0, restamped: 0 };
  const seen = new Set<string>();

  /** Returns true the first time a (kind, key, revision) is seen. */
  const firstTime = (kind: string, key: string, revision: number): boolean => {
    const id = `${kind} ${revision} ${key}`;
    if (seen.has(id)) return false;
    if (seen.size >= memory) seen.clear();
    seen.add(id);
    return true;
  };

  const parseKey = (key: string, revision: number): ProjectionKeyParts | undefined => {
    const parts = parseProjectionKey(prefix, key);
    if (parts !== undefined && isServiceKey(parts.service)) return parts;
    if (isOtherSubtree(prefix, key)) {
      // Another kind of per-origin data sharing the prefix (for example the
      // endpoint registry): not ours, not an error.
      return undefined;
    }
    if (firstTime("key", key, revision)) {
      counters.invalidKeys++;
      logger.warn({ key, revision }, "skipping a store key that is not a projection key");
    }
    return undefined;
  };

  const decodeValue = (
    parts: ProjectionKeyParts,
    raw: RawEntry,
  ): ServiceConfigProjection | undefined => {
    let projection: ServiceConfigProjection;
    try {
      projection = fromBinary(ServiceConfigProjectionSchema, raw.value);
    } catch (error) {
      if (firstTime("value", raw.key, raw.modRevision)) {
        counters.decodeErrors++;
        logger.warn(
          {
            key: raw.key,
            origin: parts.origin,
            service: parts.service,
            modRevision: raw.modRevision,
            err: error,
          },
          "skipping a store value that does not decode",
        );
      }
      return undefined;
    }
    if (projection.originCluster !== parts.origin || projection.service !== parts.service) {
      if (firstTime("stamp", raw.key, raw.modRevision)) {
        counters.restamped++;
        logger.warn(
          {
            key: raw.key,
            modRevision: raw.modRevision,
            claimedOrigin: projection.originCluster,
            claimedService: projection.service,
          },
          "re-stamping a store value whose origin or service disagrees with its key",
        );
      }
      projection.originCluster = parts.origin;
      projection.service = parts.service;
    }
    return projection;
  };

  const decodeEntry = (raw: RawEntry, filter?: ProjectionFilter): StoredProjection | undefined => {
    const parts = parseKey(raw.key, raw.modRevision);
    if (parts === undefined || !matchesFilter(parts, filter)) return undefined;
    const projection = decodeValue(parts, raw);
    if (projection === undefined) return undefined;
    return {
      origin: parts.origin,
      service: parts.service,
      projection,
      modRevision: raw.modRevision,
    };
  };

  const decodeChanges = (
    changes: readonly RawChange[],
    filter?: ProjectionFilter,
  ): StoreEvent[] => {
    const events: StoreEvent[] = [];
    for (const change of changes) {
      if (change.type === "put") {
        const entry = decodeEntry(
          { key: change.key, value: change.value, modRevision: change.revision },
          filter,
        );
        if (entry !== undefined) events.push({ type: "put", entry, revision: change.revision });
        continue;
      }
      const parts = parseKey(change.key, change.revision);
      if (parts === undefined || !matchesFilter(parts, filter)) continue;
      events.push({ type: "delete", ...parts, revision: change.revision });
    }
    return events;
  };

  return { counters, decodeEntry, decodeChanges };
}

/** The key range a listing reads. */
export interface ListRange {
  /** Every key of the listing starts with this. */
  readonly keyPrefix: string;
  /**
   * The first key to read: the prefix itself, or the position after
   * `options.after` when that lies inside the range.
   */
  readonly startKey: string;
  /** Whether `startKey` itself is excluded (it is `after`'s own key). */
  readonly startExclusive: boolean;
}

/**
 * Returns the key range of a listing: the origin's prefix when
 * `options.origin` is set and every origin's otherwise, starting strictly
 * after `options.after` when it falls inside it.
 */
export function listRange(prefix: string, options: ListOptions): ListRange {
  const keyPrefix =
    options.origin === undefined
      ? allOriginsKeyPrefix(prefix)
      : originKeyPrefix(prefix, options.origin);
  if (options.after === undefined) {
    return { keyPrefix, startKey: keyPrefix, startExclusive: false };
  }
  const afterKey = projectionKey(prefix, options.after.origin, options.after.service);
  if (compareKeys(afterKey, keyPrefix) < 0) {
    return { keyPrefix, startKey: keyPrefix, startExclusive: false };
  }
  return { keyPrefix, startKey: afterKey, startExclusive: true };
}

/**
 * Orders two store keys (negative, zero or positive, like a sort comparator)
 * by the bytes of their UTF-8 encoding, which is the order
 * etcd keeps them in (and equals Unicode code point order).
 */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/**
 * Maps a UTF-16 code unit to a rank in code point order: surrogates (which
 * encode code points above U+FFFF) rank above U+E000..U+FFFF.
 */
function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}

/** Collects one page of a listing; see {@link createPageCollector}. */
export interface PageCollector {
  /**
   * Offers the next raw entry in key order; returns false once the page is
   * complete and no more entries are wanted.
   */
  offer(raw: RawEntry): boolean;
  /** The entries collected, and whether at least one more passing entry followed. */
  result(): { entries: StoredProjection[]; more: boolean };
}

/**
 * Creates a collector that keeps the entries passing the decoder and `filter`
 * until it has `limit` of them (undefined: all), and wants one passing entry
 * beyond `limit` so that `more` is exact.
 */
export function createPageCollector(
  decoder: EntryDecoder,
  filter: ProjectionFilter,
  limit: number | undefined,
): PageCollector {
  const entries: StoredProjection[] = [];
  let more = false;
  return {
    offer(raw) {
      if (more) return false;
      const entry = decoder.decodeEntry(raw, filter);
      if (entry === undefined) return true;
      if (limit !== undefined && entries.length === limit) {
        more = true;
        return false;
      }
      entries.push(entry);
      return true;
    },
    result: () => ({ entries, more }),
  };
}

/**
 * Checks the options of a listing: `revision` a positive integer, `limit` a
 * positive integer. Throws a RangeError otherwise.
 */
export function checkListOptions(options: ListOptions): void {
  if (
    options.revision !== undefined &&
    !(Number.isSafeInteger(options.revision) && options.revision > 0)
  ) {
    throw new RangeError(`revision must be a positive integer, got ${options.revision}`);
  }
  if (options.limit !== undefined && !(Number.isSafeInteger(options.limit) && options.limit > 0)) {
    throw new RangeError(`limit must be a positive integer, got ${options.limit}`);
  }
}

/** Throws a RangeError unless `afterRevision` is a non-negative integer. */
export function checkWatchRevision(afterRevision: number): void {
  if (!(Number.isSafeInteger(afterRevision) && afterRevision >= 0)) {
    throw new RangeError(`afterRevision must be a non-negative integer, got ${afterRevision}`);
  }
}

/**
 * Runs a watch handler callback, logging at error level instead of
 * propagating what it throws, so a faulty handler cannot break a watch stream.
 */
export function callHandler(logger: Logger, callback: () => void): void {
  try {
    callback();
  } catch (error) {
    logger.error({ err: error }, "a store watch handler threw");
  }
}
