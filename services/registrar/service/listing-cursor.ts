/**
 * Where a page of a listing starts, what it holds, and the token for the page
 * after it. A listing is in one of two orders: store key order (ListConfig,
 * and ListAllConfig's ALL_ORIGINS view), where a page token's cursor is the
 * origin and service of the last entry served; or service order (the
 * EFFECTIVE view, one entry per service), where it is the service alone (its
 * origin is ""). Store key order is the byte order of the full keys, which is
 * not the order of origin then service (see `ListResult.entries`), so the
 * cursor search compares keys, never names. Synchronous and free of I/O.
 */
import { compareKeys } from "../store/decode-entry.js";
import { projectionKey } from "../store/store-key.js";
import type { PageTokens } from "./page-token.js";

/** A position in a listing: the origin and service of an entry. */
export interface ListingPosition {
  /** The origin cluster ("" in a listing by service only). */
  readonly origin: string;
  /** The service (`namespace/name`). */
  readonly service: string;
}

/** A run of a listing's entries, and whether the listing goes on after it. */
export interface PageSlice<T> {
  /** The entries of the page, in the listing's order. */
  readonly entries: T[];
  /** Whether the listing has entries after the page's last. */
  readonly more: boolean;
}

/**
 * The index of the first of `entries` (in store key order under `prefix`)
 * whose key sorts after the key of `after`: `entries.length` when none does.
 */
export function firstAfterKey(
  prefix: string,
  entries: readonly ListingPosition[],
  after: ListingPosition,
): number {
  const afterKey = projectionKey(prefix, after.origin, after.service);
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    const entry = entries[mid] as ListingPosition;
    if (compareKeys(projectionKey(prefix, entry.origin, entry.service), afterKey) <= 0) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return low;
}

/**
 * Reports whether a key-ordered window, which starts after `window.after`
 * (at the beginning when undefined), starts at or before the position after
 * `after`: whether no entry after `after` can be missing from its front.
 */
export function startsAtOrBefore(
  prefix: string,
  window: { readonly after: ListingPosition | undefined },
  after: ListingPosition,
): boolean {
  if (window.after === undefined) return true;
  return (
    compareKeys(
      projectionKey(prefix, window.after.origin, window.after.service),
      projectionKey(prefix, after.origin, after.service),
    ) <= 0
  );
}

/**
 * The index of the first of `entries` (sorted by service, one per service)
 * whose service sorts after `service`: `entries.length` when none does.
 */
export function firstAfter(
  entries: readonly { readonly service: string }[],
  service: string,
): number {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((entries[mid] as { readonly service: string }).service <= service) low = mid + 1;
    else high = mid;
  }
  return low;
}

/**
 * The page of at most `pageSize` of `entries` from index `start`. It has
 * more after it when `entries` do, or when `more` says the listing goes on
 * after the last of `entries`.
 */
export function pageOf<T>(
  entries: readonly T[],
  start: number,
  pageSize: number,
  more: boolean,
): PageSlice<T> {
  return {
    entries: entries.slice(start, start + pageSize),
    more: start + pageSize < entries.length || more,
  };
}

/**
 * The page of at most `pageSize` entries after `after` in a key-ordered
 * window read earlier (see `kept-listings.ts`), or undefined when the window
 * does not hold the whole page: it starts after the position, or it ends
 * (with more of the listing after it) before the page would.
 */
export function windowPage<T extends ListingPosition>(
  prefix: string,
  window: {
    readonly entries: readonly T[];
    readonly more: boolean;
    readonly after: ListingPosition | undefined;
  },
  after: ListingPosition,
  pageSize: number,
): PageSlice<T> | undefined {
  if (!startsAtOrBefore(prefix, window, after)) return undefined;
  const start = firstAfterKey(prefix, window.entries, after);
  if (start + pageSize > window.entries.length && window.more) return undefined;
  return pageOf(window.entries, start, pageSize, window.more);
}

/**
 * The page token (made by `tokens`) for the page after one whose last entry is `last`, in a
 * listing of the query `fingerprint` read at `revision`: "" when there is no
 * more (or the page is empty). A listing by service only (`byServiceOnly`)
 * leaves the cursor's origin "".
 */
export function nextToken(
  tokens: PageTokens,
  fingerprint: string,
  revision: number,
  last: ListingPosition | undefined,
  more: boolean,
  byServiceOnly = false,
): string {
  if (!more || last === undefined) return "";
  return tokens.encode(fingerprint, {
    revision,
    origin: byServiceOnly ? "" : last.origin,
    service: last.service,
  });
}
