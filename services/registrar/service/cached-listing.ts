/**
 * A whole listing from the synced config cache: the projections of some
 * services (every one when none are named), of one origin when given, in
 * the listing's order: store key order for the `all` view (ListConfig,
 * ListAllConfig ALL_ORIGINS), by service for `effective`. A synced cache
 * holds the store's state at its revision, so this is what a store read at
 * that revision returns (for `effective`, resolved by the import policy, as
 * the cache resolves it). Synchronous; costs one sort of what it returns.
 */
import {
  type CachedProjection,
  type CacheView,
  type ConfigCache,
  decodeCachedProjection,
} from "../cache/config-cache.js";
import type { StoredProjection } from "../store/config-store.js";
import { compareKeys } from "../store/decode-entry.js";
import { projectionKey } from "../store/store-key.js";

/** A cached projection as a store entry; its message is decoded only if read. */
export function toStoredProjection(entry: CachedProjection): StoredProjection {
  let decoded: ReturnType<typeof decodeCachedProjection> | undefined;
  return {
    origin: entry.origin,
    service: entry.service,
    value: entry.value,
    version: entry.projection.version,
    modRevision: entry.modRevision,
    get projection() {
      decoded ??= decodeCachedProjection(entry);
      return decoded;
    },
  };
}

/**
 * Returns the listing (see the module comment) of the synced `cache` under
 * the store key `prefix`, and the revision it is the store's state at.
 * Throws `StoreUnavailableError` when the cache is not synced.
 */
export function cachedListing(
  cache: Pick<ConfigCache, "snapshot">,
  prefix: string,
  services: ReadonlySet<string> | undefined,
  view: CacheView,
  origin: string | undefined,
): { readonly revision: number; readonly entries: StoredProjection[] } {
  const snapshot = cache.snapshot(services, view);
  const chosen =
    origin === undefined
      ? snapshot.entries
      : snapshot.entries.filter((entry) => entry.origin === origin);
  if (view !== "all")
    return { revision: snapshot.revision, entries: chosen.map(toStoredProjection) };
  // Each key is made once: a sort that made them per comparison would make n log n of them.
  const keyed = chosen.map((entry) => ({
    key: projectionKey(prefix, entry.origin, entry.service),
    entry,
  }));
  keyed.sort((a, b) => compareKeys(a.key, b.key));
  return { revision: snapshot.revision, entries: keyed.map((k) => toStoredProjection(k.entry)) };
}
