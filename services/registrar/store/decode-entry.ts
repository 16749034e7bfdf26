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
import { DEFAULT_PROJECTION_LIMITS } from "../../common/projection-limits.js";
import { SIGNATURE_FIELD } from "../../common/projection-signature.js";
import { checkRecordShape } from "../../common/record-shape.js";
import { checkRecordName, isMeshRecord } from "../../common/service-name.js";
import { fieldSpans } from "../../common/wire-fields.js";
import type { Logger } from "../../runtime/logger.js";
import {
  type ListOptions,
  MAX_WRITE_BATCH,
  type ProjectionFilter,
  type StoreCounters,
  type StoredProjection,
  type StoreEvent,
  type StoreWrite,
} from "./config-store.js";
import { oversizedEntry } from "./oversized-value.js";
import { createSkipReports } from "./skipped-values.js";
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
   * `filter`, or its value does not decode (counted in `decodeErrors`). A
   * value longer than `maxValueBytes` is not decoded at all: its entry is
   * an oversized one (see `oversizedEntry`), which importers reject.
   */
  decodeEntry(raw: RawEntry, filter?: ProjectionFilter): StoredProjection | undefined;
  /**
   * Returns the store events for raw changes, in order, skipping the ones
   * {@link EntryDecoder.decodeEntry} would skip (a delete has no value, so
   * only its key is checked).
   */
  decodeChanges(changes: readonly RawChange[], filter?: ProjectionFilter): StoreEvent[];
  /**
   * Notes that `value`, written under `key`, is the encoding of a projection
   * of `version` stamped with the key's origin and service (the store encoded
   * it itself), so that reading it back (a watch event, a listing) does not
   * decode it. `value` must not be modified afterwards.
   */
  noteWritten(key: string, value: Uint8Array, version: string): void;
}

/** Options of {@link createEntryDecoder}. */
export interface EntryDecoderOptions {
  /** The normalized store prefix keys are parsed under. */
  readonly prefix: string;
  /**
   * Where skipped keys and values are reported, once each, at warn level,
   * through a rate-limited log (a few lines of each kind a minute, then a count).
   */
  readonly logger: Logger;
  /**
   * How many distinct offending values are remembered for de-duplication
   * before the memory is cleared (and they may be counted again); default 10000.
   */
  readonly memory?: number;
  /**
   * How many decoded values (key, bytes, version) are remembered so that the
   * same bytes under the same key are not decoded again; default 100000.
   * The oldest are forgotten first.
   */
  readonly verifiedMemory?: number;
  /**
   * The longest value that is decoded, in bytes; default the projection
   * byte limit (`DEFAULT_PROJECTION_LIMITS.maxBytes`). A longer value is
   * never decoded: its entry is an oversized one (see `oversizedEntry`),
   * which the import policy rejects as `too_large`.
   */
  readonly maxValueBytes?: number;
}

/** A value the decoder has decoded and found needing no re-stamping. */
interface Verified {
  /** Its bytes (an owned copy). */
  readonly value: Uint8Array;
  /** Its version. */
  readonly version: string;
}

const SERVICE = /^[^/]+\/[^/]+$/;

/**
 * Reports whether `service` has the shape of a record key: `namespace/name`
 * (two non-empty parts, one slash) or the mesh record's `@mesh`.
 */
export function isServiceKey(service: string): boolean {
  return SERVICE.test(service) || isMeshRecord(service);
}

/**
 * Throws a TypeError unless `service` is `namespace/name` with both parts
 * DNS-1123 labels, or the mesh record's `@mesh`: writers are strict, so that
 * everything written is importable (readers are lenient, see
 * {@link isServiceKey}, and leave the verdict on odd names to the import
 * policy, which reports it).
 */
export function assertServiceKey(service: string): void {
  const problem = checkRecordName(service);
  if (problem !== undefined) throw new TypeError(problem);
}

/**
 * Throws a TypeError unless `projection` has the shape its key asks (see
 * `checkRecordShape`): the mesh record carries a MeshConfig and nothing else,
 * a service's projection no MeshConfig.
 */
export function assertRecordShape(projection: ServiceConfigProjection): void {
  const problem = checkRecordShape(projection.service, projection);
  if (problem !== undefined) throw new TypeError(problem);
}

/**
 * Returns the bytes a store writes for `projection` under `origin`: its
 * protobuf binary encoding with `originCluster` set to `origin`. The caller's
 * message is not modified. Throws a TypeError when `projection.service` is not
 * `namespace/name` or `@mesh`, or the projection has not the shape of its key
 * (see {@link assertRecordShape}).
 */
export function encodeProjection(projection: ServiceConfigProjection, origin: string): Uint8Array {
  assertServiceKey(projection.service);
  assertRecordShape(projection);
  return toBinary(ServiceConfigProjectionSchema, { ...projection, originCluster: origin });
}

/**
 * Returns the encoding of a projection with `originCluster` set to `origin`
 * and `version` set to `version`, given its encoding with both empty
 * (`content`): the same bytes as encoding the stamped message, without
 * walking the message again. Field 1 (`service`) leads a canonical encoding,
 * fields 2 (`origin_cluster`) and 3 (`version`) follow it, and the routes
 * (field 4) come last, so the two fields are spliced in after field 1.
 * Returns undefined when `content` does not start with field 1.
 */
export function stampContent(
  content: Uint8Array,
  origin: string,
  version: string,
): Uint8Array | undefined {
  if (content[0] !== 0x0a) return undefined;
  let length = 0;
  let shift = 0;
  let at = 1;
  for (;;) {
    const byte = content[at++];
    if (byte === undefined || shift > 28) return undefined;
    length |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) break;
    shift += 7;
  }
  const end = at + length;
  if (end > content.length) return undefined;
  const originField = stringField(2, origin);
  const versionField = stringField(3, version);
  const out = new Uint8Array(content.length + originField.length + versionField.length);
  out.set(content.subarray(0, end), 0);
  out.set(originField, end);
  out.set(versionField, end + originField.length);
  out.set(content.subarray(end), end + originField.length + versionField.length);
  return out;
}

/**
 * Returns a stored value's bytes without its `origin_cluster` (2), `version`
 * (3) and `signature` (15) fields: for a value encoded canonically (fields
 * in number order, as every writer of this code base encodes), the content
 * bytes that {@link stampContent} stamps. Returns undefined for bytes that
 * are not a well-formed sequence of protobuf fields.
 */
export function unstampValue(value: Uint8Array): Uint8Array | undefined {
  const kept: [number, number][] = [];
  for (const span of fieldSpans(value)) {
    if (span === undefined) return undefined;
    if (span.field !== 2 && span.field !== 3 && span.field !== SIGNATURE_FIELD) {
      kept.push([span.start, span.end]);
    }
  }
  const out = new Uint8Array(kept.reduce((sum, [from, to]) => sum + to - from, 0));
  let offset = 0;
  for (const [from, to] of kept) {
    out.set(value.subarray(from, to), offset);
    offset += to - from;
  }
  return out;
}

/** The encoding of a string field (empty when the string is, as proto3 omits it). */
function stringField(number: number, value: string): Uint8Array {
  if (value === "") return new Uint8Array(0);
  const bytes = Buffer.from(value, "utf8");
  const header: number[] = [(number << 3) | 2];
  for (let n = bytes.length; ; n >>>= 7) {
    if (n < 0x80) {
      header.push(n);
      break;
    }
    header.push((n & 0x7f) | 0x80);
  }
  const out = new Uint8Array(header.length + bytes.length);
  out.set(header, 0);
  out.set(bytes, header.length);
  return out;
}

/** One change of a write batch, checked and ready for the backing store. */
export interface EncodedWrite {
  /** The full store key. */
  readonly key: string;
  /** The bytes to put; undefined for a delete. */
  readonly value: Uint8Array | undefined;
}

/**
 * Checks and encodes a write batch of the store of `origin` (see
 * `ConfigStore.write`): throws a RangeError when it has more than
 * {@link MAX_WRITE_BATCH} changes, and a TypeError when a service is not
 * `namespace/name` (or `@mesh`), appears twice, or a put's projection has not
 * the shape of its key (see {@link assertRecordShape}). The values are noted as written in
 * `decoder` (see {@link EntryDecoder.noteWritten}).
 */
export function encodeWriteBatch(
  prefix: string,
  origin: string,
  changes: readonly StoreWrite[],
  decoder?: EntryDecoder,
): EncodedWrite[] {
  if (changes.length > MAX_WRITE_BATCH) {
    throw new RangeError(
      `a write batch holds at most ${MAX_WRITE_BATCH} changes, got ${changes.length}`,
    );
  }
  const seen = new Set<string>();
  return changes.map((change) => {
    const service = change.type === "put" ? change.projection.service : change.service;
    assertServiceKey(service);
    if (seen.has(service))
      throw new TypeError(`service ${service} appears twice in one write batch`);
    seen.add(service);
    const key = projectionKey(prefix, origin, service);
    if (change.type === "delete") return { key, value: undefined };
    assertRecordShape(change.projection);
    const stamped =
      change.content === undefined
        ? undefined
        : stampContent(change.content, origin, change.projection.version);
    const unsealed = stamped ?? encodeProjection(change.projection, origin);
    const value = change.seal === undefined ? unsealed : change.seal(unsealed);
    decoder?.noteWritten(key, value, change.projection.version);
    return { key, value };
  });
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
  const { prefix } = options;
  const verifiedMemory = options.verifiedMemory ?? 100_000;
  const maxValueBytes = options.maxValueBytes ?? DEFAULT_PROJECTION_LIMITS.maxBytes;
  const reports = createSkipReports(options.logger, options.memory ?? 10_000);
  /**
   * The last value decoded under each key, when it decoded and needed no
   * re-stamping: the same bytes again are known to decode to a message that
   * matches the key. Watches keep it current (a delete forgets the key).
   */
  const verified = new Map<string, Verified>();

  const remember = (key: string, value: Uint8Array, version: string, owned = false): Verified => {
    const known: Verified = {
      value: owned ? value : Uint8Array.prototype.slice.call(value),
      version,
    };
    verified.delete(key);
    verified.set(key, known);
    if (verified.size > verifiedMemory) {
      const oldest = verified.keys().next().value as string;
      verified.delete(oldest);
    }
    return known;
  };

  const parseKey = (key: string, revision: number): ProjectionKeyParts | undefined => {
    const parts = parseProjectionKey(prefix, key);
    if (parts !== undefined && isServiceKey(parts.service)) return parts;
    if (isOtherSubtree(prefix, key)) {
      // Another kind of per-origin data sharing the prefix (for example the
      // endpoint registry): not ours, not an error.
      return undefined;
    }
    reports.report(
      "key",
      key,
      revision,
      { key, revision },
      "skipping a store key that is not a projection key",
    );
    return undefined;
  };

  /** Decodes a value, re-stamping it from its key; undefined when it does not decode. */
  const decodeValue = (
    parts: ProjectionKeyParts,
    raw: RawEntry,
  ): { projection: ServiceConfigProjection; restamped: boolean } | undefined => {
    let projection: ServiceConfigProjection;
    try {
      projection = fromBinary(ServiceConfigProjectionSchema, raw.value);
    } catch (error) {
      const { origin, service } = parts;
      const fields = { key: raw.key, origin, service, modRevision: raw.modRevision, err: error };
      reports.report(
        "value",
        raw.key,
        raw.modRevision,
        fields,
        "skipping a store value that does not decode",
      );
      return undefined;
    }
    const shapeProblem = checkRecordShape(parts.service, projection);
    if (shapeProblem !== undefined) {
      const { origin, service } = parts;
      const fields = {
        key: raw.key,
        origin,
        service,
        modRevision: raw.modRevision,
        reason: shapeProblem,
      };
      reports.report(
        "value",
        raw.key,
        raw.modRevision,
        fields,
        "skipping a store value of the wrong shape for its key",
      );
      return undefined;
    }
    if (projection.originCluster !== parts.origin || projection.service !== parts.service) {
      reports.report(
        "stamp",
        raw.key,
        raw.modRevision,
        {
          key: raw.key,
          modRevision: raw.modRevision,
          claimedOrigin: projection.originCluster,
          claimedService: projection.service,
        },
        "re-stamping a store value whose origin or service disagrees with its key",
      );
      projection.originCluster = parts.origin;
      projection.service = parts.service;
      return { projection, restamped: true };
    }
    return { projection, restamped: false };
  };

  const decodeEntry = (raw: RawEntry, filter?: ProjectionFilter): StoredProjection | undefined => {
    const parts = parseKey(raw.key, raw.modRevision);
    if (parts === undefined || !matchesFilter(parts, filter)) return undefined;
    if (raw.value.length > maxValueBytes) return oversizedEntry(parts, raw.value, raw.modRevision);
    const known = verified.get(raw.key);
    if (known !== undefined && sameBytes(known.value, raw.value)) {
      return lazyEntry(parts, known.value, known.version, raw.modRevision);
    }
    const decoded = decodeValue(parts, raw);
    if (decoded === undefined) return undefined;
    const { projection, restamped } = decoded;
    const value = restamped
      ? toBinary(ServiceConfigProjectionSchema, projection)
      : remember(raw.key, raw.value, projection.version).value;
    return {
      origin: parts.origin,
      service: parts.service,
      projection,
      value,
      version: projection.version,
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
      verified.delete(change.key);
      const parts = parseKey(change.key, change.revision);
      if (parts === undefined || !matchesFilter(parts, filter)) continue;
      events.push({ type: "delete", ...parts, revision: change.revision });
    }
    return events;
  };

  return {
    counters: reports.counters,
    decodeEntry,
    decodeChanges,
    noteWritten: (key, value, version) => {
      remember(key, value, version, true);
    },
  };
}

/** Reports whether two byte arrays hold the same bytes. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return (
    a.length === b.length &&
    Buffer.from(a.buffer, a.byteOffset, a.length).equals(
      Buffer.from(b.buffer, b.byteOffset, b.length),
    )
  );
}

/**
 * An entry for a value decoded before: `projection` is decoded from `value`
 * when first read (then kept on this entry), not now.
 */
function lazyEntry(
  parts: ProjectionKeyParts,
  value: Uint8Array,
  version: string,
  modRevision: number,
): StoredProjection {
  let projection: ServiceConfigProjection | undefined;
  const entry = { origin: parts.origin, service: parts.service, value, version, modRevision };
  Object.defineProperty(entry, "projection", {
    enumerable: true,
    get: () => {
      projection ??= fromBinary(ServiceConfigProjectionSchema, value);
      return projection;
    },
  });
  return entry as StoredProjection;
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
