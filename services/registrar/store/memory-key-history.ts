/**
 * The version histories of a memory backend (memory-backend.ts): for every
 * key, its versions (values and tombstones) with their revisions, and the
 * keys in key order, so that a read at any retained revision sees exactly
 * what was live then, like etcd's MVCC store.
 */
import { compareKeys, type RawEntry } from "./decode-entry.js";

/** The versions of every key of a memory backend; see {@link createKeyHistory}. */
export interface KeyHistory {
  /**
   * Records a new version of `key` at `revision` (the newest so far): a put
   * of `value`, or a delete (a tombstone) when `value` is undefined.
   */
  record(key: string, revision: number, value: Uint8Array | undefined): void;
  /** Reports whether `key` exists now. */
  exists(key: string): boolean;
  /**
   * Returns the revision at which `key` was created (its first put since it
   * last did not exist), or undefined when it does not exist now.
   */
  createRevisionOf(key: string): number | undefined;
  /** Drops the versions of `key` that no read at `oldest` or later can see. */
  prune(key: string, oldest: number): void;
  /**
   * Returns the entries live at `revision`, in key order, whose keys start
   * with `keyPrefix`, starting at `startKey` (excluded when `startExclusive`),
   * lazily. The caller has checked that `revision` is readable.
   */
  entriesAt(
    revision: number,
    keyPrefix: string,
    startKey: string,
    startExclusive: boolean,
  ): Iterable<RawEntry>;
}

interface Version {
  readonly modRevision: number;
  /** The revision the key was created at (for a tombstone, the revision of the delete). */
  readonly createRevision: number;
  /** Undefined for a deletion (a tombstone). */
  readonly value: Uint8Array | undefined;
}

/** Creates an empty key history. */
export function createKeyHistory(): KeyHistory {
  const histories = new Map<string, Version[]>();
  /** Every key of `histories`, in key order. */
  const keys: string[] = [];

  return {
    record(key, revision, value) {
      let versions = histories.get(key);
      if (versions === undefined) {
        versions = [];
        histories.set(key, versions);
        keys.splice(lowerBound(keys, key), 0, key);
      }
      const previous = versions[versions.length - 1];
      const createRevision =
        previous?.value !== undefined && value !== undefined ? previous.createRevision : revision;
      versions.push({ modRevision: revision, createRevision, value });
    },
    exists(key) {
      const versions = histories.get(key);
      return versions !== undefined && versions[versions.length - 1]?.value !== undefined;
    },
    createRevisionOf(key) {
      const versions = histories.get(key);
      const last = versions?.[versions.length - 1];
      return last?.value === undefined ? undefined : last.createRevision;
    },
    prune(key, oldest) {
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
    },
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
