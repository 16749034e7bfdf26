/**
 * The pages of ListConfig and ListAllConfig listings. A first page is read at
 * the latest revision and every later page at the revision its page token
 * pins, so that the pages of a listing are one consistent snapshot. Where a
 * page comes from, fastest first:
 *
 * - a listing filtered by service (what every polling agent sends) starts
 *   from the synced config cache, which holds the store's state at its
 *   revision, so that it costs what the answer costs, not what the store
 *   holds;
 * - a later page comes from the window an earlier page kept (see
 *   `kept-listings.ts`) for the same query and revision, when it covers it;
 * - otherwise the store is read. A listing in store key order reads ahead
 *   {@link READ_AHEAD} entries and keeps them for the pages that follow. The
 *   EFFECTIVE view orders by service, which is not the store's key order, so
 *   it reads the whole (filtered) snapshot, resolves it with the import
 *   policy (the one place that says which origin wins) and keeps the
 *   resolution.
 *
 * Which source served a page changes how fast it is served, never what it
 * holds.
 */
import type { ServiceConfigProjection } from "../../../gen/aether/registry/v1/projection_pb.js";
import type { ImportPolicy } from "../../common/import-policy.js";
import {
  type CachedProjection,
  type CacheView,
  type ConfigCache,
  decodeCachedProjection,
} from "../cache/config-cache.js";
import type { ConfigStore, StoredProjection } from "../store/config-store.js";
import { compareKeys } from "../store/decode-entry.js";
import { projectionKey } from "../store/store-key.js";
import type { KeptListings } from "./kept-listings.js";
import { firstAfter, nextToken, type PageSlice, pageOf, windowPage } from "./listing-cursor.js";
import type { PageTokens } from "./page-token.js";
import { type ListingQuery, MAX_PAGE_SIZE } from "./request-checks.js";

/** How many entries a listing in key order reads ahead for its later pages (five full pages). */
export const READ_AHEAD = 5 * MAX_PAGE_SIZE;

/** One page of a listing. */
export interface ListingPage {
  /** The page's projections, in the listing's order. */
  readonly entries: readonly StoredProjection[];
  /** The store revision the listing is read at. */
  readonly revision: number;
  /** The token for the next page; "" when this is the last. */
  readonly nextPageToken: string;
}

/** Options of {@link createListing}. */
export interface ListingOptions {
  /** The store pages are read from when the cache or a kept window cannot serve them. */
  readonly store: ConfigStore;
  /** The cache filtered first pages are served from while it is synced. */
  readonly cache: ConfigCache;
  /** The import policy that resolves the EFFECTIVE view of a store read. */
  readonly policy: ImportPolicy;
  /** The windows kept between the pages of a listing. */
  readonly kept: KeptListings;
  /** Makes the page tokens. */
  readonly tokens: PageTokens;
}

/** Serves the pages of listings; see {@link createListing}. */
export interface Listing {
  /**
   * One page of a listing in store key order: of `origin`'s projections when
   * given (ListConfig), of every origin's otherwise (ListAllConfig
   * ALL_ORIGINS). Rejects with the store's errors when it must read it.
   */
  keyOrderedPage(query: ListingQuery & { readonly origin?: string }): Promise<ListingPage>;
  /**
   * One page of the EFFECTIVE view (ListAllConfig EFFECTIVE): one winner per
   * service, by service. Rejects with the store's errors when it must read it.
   */
  effectivePage(query: ListingQuery): Promise<ListingPage>;
}

/** A cached projection as a store entry; its message is decoded only if read. */
function toStoredProjection(entry: CachedProjection): StoredProjection {
  let decoded: ServiceConfigProjection | undefined;
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

/** Creates the listing pages' server over a store, a cache, a policy and kept windows. */
export function createListing(options: ListingOptions): Listing {
  const { store, cache, policy, kept } = options;

  /**
   * The projections of `services` (of one origin, when given) in `view`, from
   * the config cache, or undefined when it is not synced. A synced cache
   * holds the store's state at `cache.revision`, so this is what a store read
   * at that revision returns. Ordered by store key (`all`) or by service
   * (`effective`).
   */
  function cachedListing(
    services: ReadonlySet<string>,
    view: CacheView,
    origin?: string,
  ): { revision: number; entries: StoredProjection[] } | undefined {
    if (cache.state !== "synced") return undefined;
    const snapshot = cache.snapshot(services, view);
    const entries = snapshot.entries
      .filter((entry) => origin === undefined || entry.origin === origin)
      .map(toStoredProjection);
    if (view === "all") {
      const key = (e: StoredProjection) => projectionKey(store.prefix, e.origin, e.service);
      entries.sort((a, b) => compareKeys(key(a), key(b)));
    }
    return { revision: snapshot.revision, entries };
  }

  /**
   * Returns one page (entries, whether more follow, revision) of a listing
   * in store key order: from the cache for a filtered first page, from the
   * window an earlier page read ahead at the cursor's revision when it covers
   * the page, otherwise from the store, reading ahead a window of
   * {@link READ_AHEAD} entries for the pages that follow.
   */
  async function keyOrderedSlice(
    query: ListingQuery & { readonly origin?: string },
  ): Promise<PageSlice<StoredProjection> & { revision: number }> {
    const { fingerprint, services, origin, cursor, pageSize } = query;
    if (cursor === undefined && services !== undefined) {
      const cached = cachedListing(services, "all", origin);
      if (cached !== undefined) {
        kept.set(`${fingerprint}@${cached.revision}`, {
          entries: cached.entries,
          more: false,
          after: undefined,
        });
        return { ...pageOf(cached.entries, 0, pageSize, false), revision: cached.revision };
      }
    }
    const after =
      cursor === undefined ? undefined : { origin: cursor.origin, service: cursor.service };
    if (cursor !== undefined && after !== undefined) {
      const window = kept.get(`${fingerprint}@${cursor.revision}`);
      const page =
        window === undefined ? undefined : windowPage(store.prefix, window, after, pageSize);
      if (page !== undefined) return { ...page, revision: cursor.revision };
    }
    const read = await store.list({
      origin,
      services,
      revision: cursor?.revision,
      after,
      limit: Math.max(pageSize, READ_AHEAD),
    });
    kept.set(`${fingerprint}@${read.revision}`, {
      entries: read.entries,
      more: read.more,
      after,
    });
    return { ...pageOf(read.entries, 0, pageSize, read.more), revision: read.revision };
  }

  /**
   * Returns the EFFECTIVE view of the (filtered) store at `revision` (the
   * latest when undefined): one winner per service, sorted by service. Served
   * from a listing resolved earlier for the same query and revision when
   * there is one, from the cache for a filtered first page, otherwise read
   * and resolved now (and kept).
   */
  async function effectiveListing(
    fingerprint: string,
    services: ReadonlySet<string> | undefined,
    revision: number | undefined,
  ): Promise<{ revision: number; winners: readonly StoredProjection[] }> {
    if (revision !== undefined) {
      const window = kept.get(`${fingerprint}@${revision}`);
      if (window !== undefined) return { revision, winners: window.entries };
    }
    const cached =
      revision === undefined && services !== undefined
        ? cachedListing(services, "effective")
        : undefined;
    if (cached !== undefined) {
      kept.set(`${fingerprint}@${cached.revision}`, {
        entries: cached.entries,
        more: false,
        after: undefined,
      });
      return { revision: cached.revision, winners: cached.entries };
    }
    const result = await store.list({ services, revision });
    // The policy reads only service and version: offer those, so nothing is decoded.
    const candidates = result.entries.map((entry) => ({
      origin: entry.origin,
      service: entry.service,
      projection: { service: entry.service, version: entry.version },
      entry,
    }));
    const winners = [...policy.resolve(candidates).winners.values()].map((c) => c.entry);
    kept.set(`${fingerprint}@${result.revision}`, {
      entries: winners,
      more: false,
      after: undefined,
    });
    return { revision: result.revision, winners };
  }

  return {
    async keyOrderedPage(query) {
      const page = await keyOrderedSlice(query);
      return {
        entries: page.entries,
        revision: page.revision,
        nextPageToken: nextToken(
          options.tokens,
          query.fingerprint,
          page.revision,
          page.entries.at(-1),
          page.more,
        ),
      };
    },
    async effectivePage(query) {
      const { fingerprint, services, cursor, pageSize } = query;
      const { revision, winners } = await effectiveListing(fingerprint, services, cursor?.revision);
      const start = cursor === undefined ? 0 : firstAfter(winners, cursor.service);
      const page = pageOf(winners, start, pageSize, false);
      return {
        entries: page.entries,
        revision,
        nextPageToken: nextToken(
          options.tokens,
          fingerprint,
          revision,
          page.entries.at(-1),
          page.more,
          true,
        ),
      };
    },
  };
}
