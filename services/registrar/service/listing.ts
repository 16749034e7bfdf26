/**
 * The pages of ListConfig and ListAllConfig listings. A first page is read at
 * the latest revision and every later page at the revision its page token
 * pins, so that the pages of a listing are one consistent snapshot. Where a
 * page comes from, fastest first:
 *
 * - a later page comes from the window an earlier page kept (see
 *   `kept-listings.ts`) for the same query and revision, when it covers it;
 * - a first page, filtered or not, in either view, comes from the synced
 *   config cache, which holds the store's state at its revision, so that it
 *   is exactly what a store read at that revision returns (and a later page
 *   does too while the cache is still at its token's revision). It is served
 *   once the store has answered a ping that started after the request came
 *   (see `store-barrier.ts`), so a store that froze fails the listing as a
 *   store read would. A listing with more than one page keeps what it
 *   served for the pages that follow;
 * - otherwise (the cache is not synced, or it moved on since the token's
 *   revision and no window covers the page) the store is read, through the
 *   coalesced and limited reads of `store-reads.ts`. A listing in store key
 *   order reads ahead {@link READ_AHEAD} entries and keeps them for the
 *   pages that follow. The EFFECTIVE view orders by service, which is not
 *   the store's key order, so it reads the whole (filtered) snapshot,
 *   resolves it with the import policy (the one place that says which origin
 *   wins) and keeps the resolution.
 *
 * Which source served a page changes how fast it is served, never what it
 * holds.
 */
import type { ImportPolicy } from "../../common/import-policy.js";
import type { CacheView, ConfigCache } from "../cache/config-cache.js";
import type { ConfigStore, StoredProjection } from "../store/config-store.js";
import { cachedListing } from "./cached-listing.js";
import type { KeptListings, ListingWindow } from "./kept-listings.js";
import {
  firstAfter,
  firstAfterKey,
  nextToken,
  type PageSlice,
  pageOf,
  windowPage,
} from "./listing-cursor.js";
import type { PageTokens } from "./page-token.js";
import { DEFAULT_READ_LIMITS } from "./read-admission.js";
import { type ListingQuery, MAX_PAGE_SIZE } from "./request-checks.js";
import { createStoreBarrier, type StoreBarrier } from "./store-barrier.js";
import { createStoreReads, type StoreReads } from "./store-reads.js";

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
  readonly store: Pick<ConfigStore, "prefix" | "list" | "ping">;
  /** The cache first pages are served from while it is synced. */
  readonly cache: ConfigCache;
  /** The import policy that resolves the EFFECTIVE view of a store read. */
  readonly policy: ImportPolicy;
  /** The windows kept between the pages of a listing. */
  readonly kept: KeptListings;
  /** Makes the page tokens. */
  readonly tokens: PageTokens;
  /**
   * The reads of `store` (coalesced and limited); default ones with
   * {@link DEFAULT_READ_LIMITS} that wait at most two seconds for a slot.
   */
  readonly reads?: StoreReads;
  /** Confirms the store answers before the cache serves; default one over `store.ping`. */
  readonly barrier?: StoreBarrier;
}

/** Serves the pages of listings; see {@link createListing}. */
export interface Listing {
  /**
   * One page of a listing in store key order: of `origin`'s projections when
   * given (ListConfig), of every origin's otherwise (ListAllConfig
   * ALL_ORIGINS). Rejects with the store's errors when it must read it or
   * the store does not answer, and with `ListReadsBusyError` when too many
   * reads are waiting already.
   */
  keyOrderedPage(query: ListingQuery & { readonly origin?: string }): Promise<ListingPage>;
  /**
   * One page of the EFFECTIVE view (ListAllConfig EFFECTIVE): one winner per
   * service, by service. Rejects as {@link Listing.keyOrderedPage} does.
   */
  effectivePage(query: ListingQuery): Promise<ListingPage>;
}

/** A listing at one revision, whole: what the cache serves, and what is kept of it. */
interface WholeListing {
  readonly revision: number;
  readonly entries: readonly StoredProjection[];
}

/** Creates the listing pages' server over a store, a cache, a policy and kept windows. */
export function createListing(options: ListingOptions): Listing {
  const { store, cache, policy, kept } = options;
  const reads =
    options.reads ?? createStoreReads({ store, limits: DEFAULT_READ_LIMITS, waitMs: 2_000 });
  const barrier = options.barrier ?? createStoreBarrier(() => store.ping());

  /** A whole listing kept under `key`, if the window kept there is one (not a read-ahead part). */
  const keptWhole = (key: string): readonly StoredProjection[] | undefined => {
    const window = kept.get(key);
    return window !== undefined && window.after === undefined && !window.more
      ? window.entries
      : undefined;
  };

  /**
   * The whole listing of `query` in `view` from the synced cache, at its
   * revision (which must be `at` when given), once the store has answered
   * a ping; undefined when the cache cannot serve it (not synced, or at
   * another revision). Served from the listing kept at that revision when
   * there is one; kept when it has more than one page.
   */
  async function fromCache(
    query: ListingQuery & { readonly origin?: string },
    view: CacheView,
    at: number | undefined,
  ): Promise<WholeListing | undefined> {
    const servable = () => cache.state === "synced" && (at === undefined || cache.revision === at);
    if (!servable()) return undefined;
    await barrier.confirm();
    if (!servable()) return undefined;
    const revision = cache.revision;
    const key = `${query.fingerprint}@${revision}`;
    const whole = keptWhole(key);
    if (whole !== undefined) return { revision, entries: whole };
    const listing = cachedListing(cache, store.prefix, query.services, view, query.origin);
    if (listing.entries.length > query.pageSize) {
      kept.set(key, { entries: listing.entries, more: false, after: undefined });
    }
    return listing;
  }

  /**
   * Returns one page (entries, whether more follow, revision) of a listing
   * in store key order: from the window an earlier page kept at the cursor's
   * revision when it covers the page, from the synced cache when it can
   * serve the listing's revision, otherwise from the store, reading ahead a
   * window of {@link READ_AHEAD} entries for the pages that follow.
   */
  async function keyOrderedSlice(
    query: ListingQuery & { readonly origin?: string },
  ): Promise<PageSlice<StoredProjection> & { revision: number }> {
    const { fingerprint, services, origin, cursor, pageSize } = query;
    const after =
      cursor === undefined ? undefined : { origin: cursor.origin, service: cursor.service };
    if (cursor !== undefined && after !== undefined) {
      const window = kept.get(`${fingerprint}@${cursor.revision}`);
      const page =
        window === undefined ? undefined : windowPage(store.prefix, window, after, pageSize);
      if (page !== undefined) return { ...page, revision: cursor.revision };
    }
    const cached = await fromCache(query, "all", cursor?.revision);
    if (cached !== undefined) {
      const start = after === undefined ? 0 : firstAfterKey(store.prefix, cached.entries, after);
      return { ...pageOf(cached.entries, start, pageSize, false), revision: cached.revision };
    }
    const read = await reads.list({
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
    } satisfies ListingWindow);
    return { ...pageOf(read.entries, 0, pageSize, read.more), revision: read.revision };
  }

  /**
   * Returns the EFFECTIVE view of the (filtered) store at `revision` (the
   * latest when undefined): one winner per service, sorted by service. Served
   * from a listing resolved earlier for the same query and revision when
   * there is one, from the synced cache when it can serve that revision,
   * otherwise read and resolved now (and kept).
   */
  async function effectiveListing(query: ListingQuery): Promise<WholeListing> {
    const { fingerprint, services } = query;
    const revision = query.cursor?.revision;
    if (revision !== undefined) {
      const window = kept.get(`${fingerprint}@${revision}`);
      if (window !== undefined) return { revision, entries: window.entries };
    }
    const cached = await fromCache(query, "effective", revision);
    if (cached !== undefined) return cached;
    const result = await reads.list({ services, revision });
    // The policy reads service and version, and judges the stored bytes (size,
    // signature): offer those, so nothing is decoded.
    const candidates = result.entries.map((entry) => ({
      origin: entry.origin,
      service: entry.service,
      projection: { service: entry.service, version: entry.version },
      value: entry.value,
      entry,
    }));
    const winners = [...policy.resolve(candidates).winners.values()].map((c) => c.entry);
    kept.set(`${fingerprint}@${result.revision}`, {
      entries: winners,
      more: false,
      after: undefined,
    });
    return { revision: result.revision, entries: winners };
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
      const { fingerprint, cursor, pageSize } = query;
      const { revision, entries } = await effectiveListing(query);
      const start = cursor === undefined ? 0 : firstAfter(entries, cursor.service);
      const page = pageOf(entries, start, pageSize, false);
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
