/**
 * Listings kept between the pages of a paginated read. Every page of a
 * ListConfig or ListAllConfig listing is read at the revision its first page
 * was read at, so what one request read from the store at that revision is
 * still exactly right for the next: the ConfigService reads ahead (a window
 * of up to a thousand entries, or, for the EFFECTIVE view, the whole resolved
 * listing) and serves the following pages from the window, instead of asking
 * the store again for every page. A window is keyed by its query and
 * revision; a request that finds none (another replica served the previous
 * page, or the window expired) reads the store at the page token's revision
 * as before, so keeping windows changes how fast pages are served, never what
 * they hold. (A page served from a window may outlive the store's compaction
 * of its revision: it is still that revision's page. A page the window does
 * not cover is read from the store, and fails with OUT_OF_RANGE then.)
 */
import type { StoredProjection } from "../store/config-store.js";

/** A part of a listing read at one revision. */
export interface ListingWindow {
  /** The entries, in the listing's order. */
  readonly entries: readonly StoredProjection[];
  /** Whether the listing goes on after the last entry. */
  readonly more: boolean;
  /**
   * The position the window starts after (the page token's cursor it was
   * read for); undefined when it starts at the beginning of the listing.
   */
  readonly after: { readonly origin: string; readonly service: string } | undefined;
}

/** Options of {@link createKeptListings}. */
export interface KeptListingsOptions {
  /** How many windows are kept; the least recently used goes first. */
  readonly capacity: number;
  /** How long a window is kept after it was last used, in milliseconds. */
  readonly ttlMs: number;
  /** The current time in milliseconds; default `Date.now`. */
  readonly now?: () => number;
}

/** A bounded set of listing windows; see {@link createKeptListings}. */
export interface KeptListings {
  /** Returns the window kept under `key` (and counts it as used), or undefined. */
  get(key: string): ListingWindow | undefined;
  /** Keeps `window` under `key`, forgetting the least recently used beyond the capacity. */
  set(key: string, window: ListingWindow): void;
  /** How many windows are kept now. */
  readonly size: number;
}

/** Creates an empty set of kept listing windows. */
export function createKeptListings(options: KeptListingsOptions): KeptListings {
  const now = options.now ?? Date.now;
  const kept = new Map<string, { window: ListingWindow; expires: number }>();

  const expire = (at: number): void => {
    for (const [key, entry] of kept) if (entry.expires <= at) kept.delete(key);
  };

  return {
    get(key) {
      const at = now();
      expire(at);
      const entry = kept.get(key);
      if (entry === undefined) return undefined;
      kept.delete(key);
      entry.expires = at + options.ttlMs;
      kept.set(key, entry);
      return entry.window;
    },
    set(key, window) {
      const at = now();
      expire(at);
      kept.delete(key);
      kept.set(key, { window, expires: at + options.ttlMs });
      while (kept.size > options.capacity) kept.delete(kept.keys().next().value as string);
    },
    get size() {
      return kept.size;
    },
  };
}
