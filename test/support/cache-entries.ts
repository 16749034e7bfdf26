/** Builders of config-cache entries, changes and records for the cores' table-driven tests. */
import type { CachedProjection } from "../../services/registrar/cache/cached-projection.js";
import type {
  CacheChange,
  CacheEvent,
  ChangeRecord,
} from "../../services/registrar/cache/projection-index.js";

/**
 * Bytes that are not a valid protobuf encoding (a truncated varint): an entry
 * holding them shows that nothing on its way through decodes it.
 */
export const UNDECODABLE = Uint8Array.of(0x08, 0xff);

/**
 * A cache entry of `service` from `origin` at `version`, written at
 * `modRevision`; its value is {@link UNDECODABLE} unless given.
 */
export function cachedEntry(
  origin: string,
  service: string,
  version: string,
  modRevision: number,
  value: Uint8Array = UNDECODABLE,
): CachedProjection {
  return { origin, service, projection: { service, version }, value, modRevision };
}

/** A put of `entry` at its own modification revision. */
export function putOf(entry: CachedProjection): CacheChange {
  return { type: "put", entry, revision: entry.modRevision };
}

/** A delete of `origin`'s projection of `service` at `revision`. */
export function deleteOf(origin: string, service: string, revision: number): CacheChange {
  return { type: "delete", origin, service, revision };
}

/** An event as `type:origin/service@revision`, or `-` for none: short enough for a table. */
export function eventText(event: CacheEvent | undefined): string {
  if (event === undefined) return "-";
  return `${event.type}:${event.origin}/${event.service}@${event.revision}`;
}

/**
 * A change record at `revision` of an upsert (or, with `type`, a delete) of
 * `origin`'s `service`; `effective` tells whether the effective view sees it
 * too. Entries of upserts are built with {@link cachedEntry}.
 */
export function recordOf(
  revision: number,
  service = `ns/s${revision}`,
  options: { origin?: string; type?: "upsert" | "delete"; effective?: boolean } = {},
): ChangeRecord {
  const origin = options.origin ?? "hub";
  const type = options.type ?? "upsert";
  const event: CacheEvent =
    type === "upsert"
      ? { type, origin, service, revision, entry: cachedEntry(origin, service, "v", revision) }
      : { type, origin, service, revision };
  return { revision, raw: event, effective: options.effective === false ? undefined : event };
}
