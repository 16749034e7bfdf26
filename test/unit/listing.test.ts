/**
 * The listing's sources (the synced cache, a kept window, the store) and the
 * EFFECTIVE view's resolution of a store read by the import policy: which
 * source serves each page, and that the pages are the same whichever does.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createImportPolicy, type ImportPolicy } from "../../services/common/import-policy.js";
import {
  type ConfigCache,
  createConfigCache,
} from "../../services/registrar/cache/config-cache.js";
import { createKeptListings } from "../../services/registrar/service/kept-listings.js";
import {
  createListing,
  type ListingPage,
  READ_AHEAD,
} from "../../services/registrar/service/listing.js";
import { createPageTokens, type PageCursor } from "../../services/registrar/service/page-token.js";
import type { ListingQuery } from "../../services/registrar/service/request-checks.js";
import {
  type ConfigStore,
  type ListOptions,
  StoreUnavailableError,
} from "../../services/registrar/store/config-store.js";
import {
  createMemoryBackend,
  createMemoryStore,
} from "../../services/registrar/store/memory-store.js";
import { DEFAULT_STORE_PREFIX, projectionKey } from "../../services/registrar/store/store-key.js";
import { createOriginKeysCheck } from "../../services/signing/origin-keys-source.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { newSigningKey, originKeysOf, signedValue } from "../support/signing-keys.js";
import { waitFor } from "../support/wait.js";

/** A cache that has not synced: the listing then reads the store. */
const STARTING = { state: "starting" } as ConfigCache;

const caches: ConfigCache[] = [];
afterEach(async () => {
  await Promise.all(caches.splice(0).map((c) => c.stop()));
});

/** `inner` with its list reads recorded. */
function counted(inner: ConfigStore): { store: ConfigStore; reads: ListOptions[] } {
  const reads: ListOptions[] = [];
  return {
    reads,
    store: {
      ...inner,
      list: (options) => {
        reads.push(options ?? {});
        return inner.list(options);
      },
    },
  };
}

/** The page tokens of every listing here. */
const tokens = createPageTokens({ key: Buffer.alloc(32, 7), now: () => 1_000 });

/** A listing over `store` and `cache` with windows of its own. */
function listingOver(store: ConfigStore, cache: ConfigCache, policy = createImportPolicy()) {
  return createListing({
    store,
    cache,
    policy,
    kept: createKeptListings({ capacity: 8, ttlMs: 60_000, now: () => 0 }),
    tokens,
  });
}

/** A synced cache of `store`. */
async function syncedCache(
  store: ConfigStore,
  policy = createImportPolicy(),
): Promise<ConfigCache> {
  const cache = createConfigCache({ store, policy });
  caches.push(cache);
  cache.start();
  await cache.whenSynced();
  return cache;
}

/** Reads every page of a listing; returns the pages. */
async function allPages(
  page: (cursor: PageCursor | undefined) => Promise<ListingPage>,
  fingerprint: string,
): Promise<ListingPage[]> {
  const pages: ListingPage[] = [];
  let cursor: PageCursor | undefined;
  do {
    const next = await page(cursor);
    pages.push(next);
    cursor = next.nextPageToken === "" ? undefined : tokens.decode(fingerprint, next.nextPageToken);
  } while (cursor !== undefined);
  return pages;
}

const query = (fields: Partial<ListingQuery> = {}): ListingQuery => ({
  fingerprint: "q",
  services: undefined,
  cursor: undefined,
  pageSize: 5,
  ...fields,
});

const names = (page: ListingPage) => page.entries.map((e) => `${e.service}@${e.origin}`);

describe("a listing in key order", () => {
  it("reads ahead once and serves the later pages from the window, at one revision", async () => {
    const inner = createMemoryStore({ origin: "hub" });
    for (let i = 0; i < 12; i++) await inner.put(makeProjection(`ns/s${i}`));
    const { store, reads } = counted(inner);
    const listing = listingOver(store, STARTING);
    const pages = await allPages((cursor) => listing.keyOrderedPage(query({ cursor })), "q");
    expect(pages.map((p) => p.entries.length)).toEqual([5, 5, 2]);
    expect(new Set(pages.map((p) => p.revision)).size).toBe(1);
    expect(reads).toEqual([
      {
        origin: undefined,
        services: undefined,
        revision: undefined,
        after: undefined,
        limit: READ_AHEAD,
      },
    ]);
    expect(pages.flatMap(names)).toEqual(
      (await inner.list()).entries.map((e) => `${e.service}@${e.origin}`),
    );
  });

  it("reads a page no window covers at the cursor's revision, after the cursor", async () => {
    const inner = createMemoryStore({ origin: "hub" });
    for (let i = 0; i < 6; i++) await inner.put(makeProjection(`ns/s${i}`));
    const { store, reads } = counted(inner);
    const first = await listingOver(store, STARTING).keyOrderedPage({ ...query(), origin: "hub" });
    await inner.put(makeProjection("ns/s00-later"));
    const cursor = tokens.decode("q", first.nextPageToken);
    // Another replica (no kept window) serves the next page.
    const second = await listingOver(store, STARTING).keyOrderedPage({
      ...query({ cursor }),
      origin: "hub",
    });
    expect(reads.at(-1)).toMatchObject({
      origin: "hub",
      revision: first.revision,
      after: { origin: cursor.origin, service: cursor.service },
    });
    expect(second.revision).toBe(first.revision);
    expect([...names(first), ...names(second)]).toHaveLength(6);
    expect(second.nextPageToken).toBe("");
  });

  it("serves a filtered first page from the synced cache, of one origin when asked, without a store read", async () => {
    const backend = createMemoryBackend();
    const hub = createMemoryStore({ origin: "hub", backend });
    const east = createMemoryStore({ origin: "east", backend });
    for (const service of ["a/z", "a/b", "a/c"]) {
      await hub.put(makeProjection(service));
      await east.put(makeProjection(service));
    }
    const cache = await syncedCache(hub);
    const { store, reads } = counted(hub);
    const listing = listingOver(store, cache);
    const services = new Set(["a/z", "a/b", "a/absent"]);
    const cases: [string | undefined, string[]][] = [
      // Store key order: origin east before hub; within one, a/z (YS96) before a/b (YS9i).
      [undefined, ["a/z@east", "a/b@east", "a/z@hub", "a/b@hub"]],
      ["east", ["a/z@east", "a/b@east"]],
    ];
    for (const [origin, expected] of cases) {
      const fingerprint = `q-${origin}`;
      const pages = await allPages(
        (cursor) =>
          listing.keyOrderedPage({
            ...query({ fingerprint, services, cursor, pageSize: 1 }),
            origin,
          }),
        fingerprint,
      );
      expect(pages.flatMap(names)).toEqual(expected);
      expect(new Set(pages.map((p) => p.revision))).toEqual(new Set([cache.revision]));
    }
    expect(reads).toEqual([]);
  });
});

describe("the EFFECTIVE view", () => {
  /** `shop/cart` from hub and east, and `shop/pay` from east only, at these versions. */
  async function twoOrigins(hubVersion: string, eastVersion: string) {
    const backend = createMemoryBackend();
    const hub = createMemoryStore({ origin: "hub", backend });
    const east = createMemoryStore({ origin: "east", backend });
    await hub.put(makeProjection("shop/cart", { version: hubVersion }));
    await east.put(makeProjection("shop/cart", { version: eastVersion }));
    await east.put(makeProjection("shop/pay", { version: versionAt(5) }));
    return hub;
  }

  const cases: [string, ImportPolicy, string, string, string[]][] = [
    [
      "the newer version",
      createImportPolicy(),
      versionAt(1),
      versionAt(2),
      ["shop/cart@east", "shop/pay@east"],
    ],
    [
      "the smaller origin name at equal versions",
      createImportPolicy(),
      versionAt(3),
      versionAt(3),
      ["shop/cart@east", "shop/pay@east"],
    ],
    [
      "the newer version, the other way round",
      createImportPolicy(),
      versionAt(4),
      versionAt(2),
      ["shop/cart@hub", "shop/pay@east"],
    ],
    [
      "the control cluster only, however old",
      createImportPolicy({ controlCluster: "hub" }),
      versionAt(1),
      versionAt(9),
      ["shop/cart@hub"],
    ],
  ];
  for (const [name, policy, hubVersion, eastVersion, expected] of cases) {
    it(`resolves a store read to ${name}, as the cache does`, async () => {
      const store = await twoOrigins(hubVersion, eastVersion);
      const fromStore = await listingOver(store, STARTING, policy).effectivePage(query());
      expect(names(fromStore)).toEqual(expected);
      expect(fromStore.nextPageToken).toBe("");
      const cache = await syncedCache(store, policy);
      const services = new Set(["shop/cart", "shop/pay"]);
      const fromCache = await listingOver(store, cache, policy).effectivePage(query({ services }));
      expect(names(fromCache)).toEqual(expected);
    });
  }

  it("judges the stored bytes of a store read when signatures are checked, as the cache does", async () => {
    const key = newSigningKey();
    const backend = createMemoryBackend();
    const hub = createMemoryStore({ origin: "hub", backend });
    const east = createMemoryStore({ origin: "east", backend });
    const signed = signedValue(makeProjection("shop/cart", { version: versionAt(2) }), "hub", key);
    hub.putRaw(projectionKey(DEFAULT_STORE_PREFIX, "hub", "shop/cart"), signed);
    // Newer, but unsigned: refused when signatures are required.
    await east.put(makeProjection("shop/cart", { version: versionAt(3) }));
    const keys = originKeysOf({ hub: [key] });
    const policy = createImportPolicy({ signatures: createOriginKeysCheck(() => keys, true) });
    const fromStore = await listingOver(hub, STARTING, policy).effectivePage(query());
    expect(names(fromStore)).toEqual(["shop/cart@hub"]);
    const cache = await syncedCache(hub, policy);
    const fromCache = await listingOver(hub, cache, policy).effectivePage(
      query({ services: new Set(["shop/cart"]) }),
    );
    expect(names(fromCache)).toEqual(["shop/cart@hub"]);
  });

  it("pages one revision's resolution from the kept listing, and without it at the token's revision", async () => {
    const inner = createMemoryStore({ origin: "hub" });
    for (let i = 0; i < 7; i++) await inner.put(makeProjection(`ns/s${i}`));
    const { store, reads } = counted(inner);
    const listing = listingOver(store, STARTING);
    const first = await listing.effectivePage(query({ pageSize: 3 }));
    const cursor = tokens.decode("q", first.nextPageToken);
    expect(cursor.origin).toBe("");
    await inner.put(makeProjection("ns/s0-later"));
    const kept = await listing.effectivePage(query({ pageSize: 3, cursor }));
    expect(reads).toHaveLength(1);
    const again = await listingOver(store, STARTING).effectivePage(query({ pageSize: 3, cursor }));
    expect(reads.at(-1)).toEqual({ services: undefined, revision: first.revision });
    for (const page of [kept, again]) {
      expect(names(page)).toEqual(["ns/s3@hub", "ns/s4@hub", "ns/s5@hub"]);
      expect(page.revision).toBe(first.revision);
      expect(tokens.decode("q", page.nextPageToken)).toEqual({
        revision: first.revision,
        origin: "",
        service: "ns/s5",
      });
    }
  });
});

describe("listings under load", () => {
  /** hub's `ns/s0`…`ns/s11` and east's `ns/s0`…`ns/s3`, on one backend; hub's store. */
  async function twoOriginsOfTwelve(): Promise<ConfigStore> {
    const backend = createMemoryBackend();
    const hub = createMemoryStore({ origin: "hub", backend });
    const east = createMemoryStore({ origin: "east", backend });
    for (let i = 0; i < 12; i++) await hub.put(makeProjection(`ns/s${i}`));
    for (let i = 0; i < 4; i++)
      await east.put(makeProjection(`ns/s${i}`, { version: versionAt(9) }));
    return hub;
  }

  it("serves unfiltered first pages of both views from the synced cache, as a store read at its revision would, without a store read", async () => {
    const inner = await twoOriginsOfTwelve();
    const cache = await syncedCache(inner);
    const { store, reads } = counted(inner);
    const fromCache = listingOver(store, cache);
    const fromStore = listingOver(inner, STARTING);
    for (const pageSize of [3, 100]) {
      // Each query has a fingerprint of its own, as the ConfigService's do.
      const all = query({ pageSize, fingerprint: "all" });
      const east = { ...query({ pageSize, fingerprint: "east" }), origin: "east" };
      const winners = query({ pageSize, fingerprint: "effective" });
      const key = [await fromCache.keyOrderedPage(all), await fromStore.keyOrderedPage(all)];
      const origin = [await fromCache.keyOrderedPage(east), await fromStore.keyOrderedPage(east)];
      const effective = [
        await fromCache.effectivePage(winners),
        await fromStore.effectivePage(winners),
      ];
      for (const [cached, read] of [key, origin, effective] as ListingPage[][]) {
        expect(names(cached as ListingPage)).toEqual(names(read as ListingPage));
        expect(cached?.entries.map((e) => e.value)).toEqual(read?.entries.map((e) => e.value));
        expect(cached?.revision).toBe(cache.revision);
        expect(cached?.nextPageToken === "").toBe(read?.nextPageToken === "");
      }
    }
    expect(reads).toEqual([]);
  });

  it("serves a later page from the cache while it is still at the token's revision, and from the store at that revision once it moved on", async () => {
    const inner = await twoOriginsOfTwelve();
    const cache = await syncedCache(inner);
    const { store, reads } = counted(inner);
    const first = await listingOver(store, cache).keyOrderedPage(query({ pageSize: 5 }));
    const cursor = tokens.decode("q", first.nextPageToken);
    // Another replica: no kept listing, the cache at the token's revision.
    const second = await listingOver(store, cache).keyOrderedPage(query({ pageSize: 5, cursor }));
    expect(reads).toEqual([]);
    const written = await inner.put(makeProjection("ns/s00-later"));
    await waitFor(() => cache.revision >= written, 1_000, "the cache to move on");
    const again = await listingOver(store, cache).keyOrderedPage(query({ pageSize: 5, cursor }));
    expect(reads).toEqual([
      {
        origin: undefined,
        services: undefined,
        revision: first.revision,
        after: { origin: cursor.origin, service: cursor.service },
        limit: READ_AHEAD,
      },
    ]);
    expect(names(again)).toEqual(names(second));
    expect(again.revision).toBe(first.revision);
  });

  it("answers a first page from the cache only once the store answered a ping, and fails as the ping did", async () => {
    const inner = await twoOriginsOfTwelve();
    const cache = await syncedCache(inner);
    let pings = 0;
    let down = false;
    const { store, reads } = counted({
      ...inner,
      ping: async () => {
        pings++;
        if (down) throw new StoreUnavailableError("etcd ping took over 1000 ms");
      },
    });
    const listing = listingOver(store, cache);
    await listing.effectivePage(query());
    expect(pings).toBe(1);
    down = true;
    await expect(listing.keyOrderedPage(query())).rejects.toThrow(StoreUnavailableError);
    await expect(listing.effectivePage(query({ services: new Set(["ns/s1"]) }))).rejects.toThrow(
      /ping took over/,
    );
    expect(reads).toEqual([]);
  });

  it("makes one store read for many identical first pages while the cache is not synced", async () => {
    const inner = await twoOriginsOfTwelve();
    const { store, reads } = counted(inner);
    const listing = listingOver(store, STARTING);
    const pages = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        i % 2 === 0 ? listing.effectivePage(query()) : listing.keyOrderedPage(query()),
      ),
    );
    expect(reads).toHaveLength(2);
    expect(new Set(pages.map((p) => p.revision)).size).toBe(1);
  });
});
