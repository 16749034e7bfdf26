/**
 * Versions as the fleet view compares them: a service's bounded history of
 * current versions (what one registrar saw win, newest first), how many of
 * them are newer than what a cluster serves, and export times in
 * milliseconds. Pure, no I/O.
 */
import { parseVersion } from "./projection-version.js";

/** How many versions a service's history keeps (and the cap of `versions_behind`). */
export const VERSION_HISTORY_LIMIT = 16;

/** A projection of a service by its origin and version. */
export interface FleetVersion {
  /** Its origin. */
  readonly origin: string;
  /** Its version (an RFC 3339 export time). */
  readonly version: string;
}

/** Whether two versions are the same projection (same origin and version). */
export function sameVersion(a: FleetVersion | undefined, b: FleetVersion | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.origin === b.origin && a.version === b.version;
}

/** How many parsed versions {@link versionNanos} remembers before it starts over. */
const PARSED_LIMIT = 50_000;
const parsed = new Map<string, bigint | undefined>();

/**
 * {@link parseVersion}, remembered: the fleet view compares the same few
 * versions of a service across every cluster and replica, and parsing is
 * most of its cost. At most {@link PARSED_LIMIT} are kept (then forgotten
 * at once), so memory stays bounded whatever the versions.
 */
export function versionNanos(version: string): bigint | undefined {
  if (parsed.has(version)) return parsed.get(version);
  if (parsed.size >= PARSED_LIMIT) parsed.clear();
  const nanos = parseVersion(version);
  parsed.set(version, nanos);
  return nanos;
}

/** A version's export time in milliseconds since the epoch; undefined when it does not parse. */
export function exportTimeMs(version: string): number | undefined {
  const nanos = versionNanos(version);
  return nanos === undefined ? undefined : Number(nanos / 1_000_000n);
}

/** Orders versions newest first (by instant; unparseable ones last, then by text and origin). */
export function newestFirst(a: FleetVersion, b: FleetVersion): number {
  if (a.version === b.version) return a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : 0;
  const x = versionNanos(a.version);
  const y = versionNanos(b.version);
  if (x !== y) {
    if (x === undefined) return 1;
    if (y === undefined) return -1;
    return x > y ? -1 : 1;
  }
  if (a.version !== b.version) return a.version < b.version ? -1 : 1;
  return a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : 0;
}

/**
 * The history after `seen` became current: `seen` added unless it is already
 * there, newest first, at most {@link VERSION_HISTORY_LIMIT} (the oldest
 * dropped). Returns `history` itself when nothing changes.
 */
export function addToHistory(
  history: readonly FleetVersion[],
  seen: FleetVersion,
): readonly FleetVersion[] {
  if (history.some((v) => sameVersion(v, seen))) return history;
  return [...history, { origin: seen.origin, version: seen.version }]
    .sort(newestFirst)
    .slice(0, VERSION_HISTORY_LIMIT);
}

/**
 * How many versions behind `current` a cluster serving `served` is: 0 when it
 * serves the current one (or there is none); else how many versions of
 * `history` are newer than `served` (all of them when it serves none or an
 * unparseable one; 0 when it serves a newer one), at most
 * {@link VERSION_HISTORY_LIMIT}.
 */
export function versionsBehind(
  served: FleetVersion | undefined,
  current: FleetVersion | undefined,
  history: readonly FleetVersion[],
): number {
  if (current === undefined || sameVersion(served, current)) return 0;
  const servedNanos = served === undefined ? undefined : versionNanos(served.version);
  const newer = history.filter((v) => {
    if (servedNanos === undefined) return true;
    const nanos = versionNanos(v.version);
    return nanos !== undefined && nanos > servedNanos;
  }).length;
  return Math.min(VERSION_HISTORY_LIMIT, newer);
}
