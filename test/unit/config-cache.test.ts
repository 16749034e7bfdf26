import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { createImportPolicy } from "../../services/common/import-policy.js";
import {
  type CacheEvent,
  type ConfigCache,
  createConfigCache,
} from "../../services/registrar/cache/config-cache.js";
import {
  type ConfigStore,
  StoreUnavailableError,
  type WatchHandler,
} from "../../services/registrar/store/config-store.js";
import { createMemoryStore } from "../../services/registrar/store/memory-store.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

/** A memory store whose reachability the test switches off and on (a unit-test fake). */
function switchableStore(inner: ConfigStore) {
  let down = false;
  const handlers = new Set<WatchHandler>();
  const unavailable = () => Promise.reject(new StoreUnavailableError("store switched off"));
  const store: ConfigStore = {
    kind: inner.kind,
    origin: inner.origin,
    prefix: inner.prefix,
    counters: inner.counters,
    list: (options) => (down ? unavailable() : inner.list(options)),
    revision: () => (down ? unavailable() : inner.revision()),
    put: (p) => inner.put(p),
    delete: (s) => inner.delete(s),
    write: (changes) => inner.write(changes),
    ping: () => (down ? unavailable() : inner.ping()),
    close: () => inner.close(),
    watch(after, handler, filter) {
      handlers.add(handler);
      const watch = inner.watch(after, handler, filter);
      return {
        cancel: async () => {
          handlers.delete(handler);
          await watch.cancel();
        },
      };
    },
  };
  return {
    store,
    setDown(value: boolean) {
      down = value;
      if (value)
        for (const h of [...handlers]) h.onError(new StoreUnavailableError("store switched off"));
    },
  };
}

const caches: ConfigCache[] = [];
afterEach(async () => {
  await Promise.all(caches.splice(0).map((c) => c.stop()));
});

function cacheOver(store: ConfigStore, historyLimit = 10_000): ConfigCache {
  const cache = createConfigCache({
    store,
    policy: createImportPolicy(),
    historyLimit,
    pingIntervalMs: 20,
    retryMinMs: 5,
    retryMaxMs: 20,
  });
  caches.push(cache);
  cache.start();
  return cache;
}

const noop = () => undefined;

describe("config cache", () => {
  it("replays retained history and falls back to a snapshot past it", async () => {
    const store = createMemoryStore({ origin: "hub" });
    const cache = cacheOver(store, 3);
    await cache.whenSynced();
    const start = cache.revision;
    for (let i = 0; i < 10; i++) await store.put(makeProjection(`ns/s${i}`));
    await waitFor(() => cache.revision === start + 10);

    const old = cache.subscribe({
      view: "all",
      resumeRevision: start,
      onEvents: noop,
      onClose: noop,
    });
    expect(old.initial.kind).toBe("snapshot");
    if (old.initial.kind === "snapshot") expect(old.initial.entries).toHaveLength(10);
    const recent = cache.subscribe({
      view: "all",
      resumeRevision: start + 8,
      onEvents: noop,
      onClose: noop,
    });
    expect(recent.initial.kind).toBe("replay");
    if (recent.initial.kind === "replay") {
      expect(recent.initial.events.map((e) => e.service)).toEqual(["ns/s8", "ns/s9"]);
    }
  });

  it("resuming from a revision of several changes (a batched write) sends all of them again", async () => {
    const store = createMemoryStore({ origin: "hub" });
    const cache = cacheOver(store);
    await cache.whenSynced();
    const single = await store.put(makeProjection("ns/first"));
    const batch = await store.write(
      ["ns/a", "ns/b", "ns/c"].map((s) => ({ type: "put", projection: makeProjection(s) })),
    );
    const after = await store.put(makeProjection("ns/last"));
    await waitFor(() => cache.revision === after);
    const replay = (resumeRevision: number) => {
      const sub = cache.subscribe({ view: "all", resumeRevision, onEvents: noop, onClose: noop });
      sub.unsubscribe();
      expect(sub.initial.kind).toBe("replay");
      return sub.initial.kind === "replay"
        ? sub.initial.events.map((e) => `${e.service}@${e.revision}`)
        : [];
    };
    // A client that applied only ns/a of the batch (its last revision is the
    // batch's) gets the whole batch again, then what followed.
    expect(replay(batch)).toEqual([
      `ns/a@${batch}`,
      `ns/b@${batch}`,
      `ns/c@${batch}`,
      `ns/last@${after}`,
    ]);
    // A revision of one change is not repeated.
    expect(replay(single)).toEqual([
      `ns/a@${batch}`,
      `ns/b@${batch}`,
      `ns/c@${batch}`,
      `ns/last@${after}`,
    ]);
    expect(replay(after)).toEqual([]);

    // A cache that starts at the batch's revision still replays the batch.
    const restarted = createMemoryStore({ origin: "hub", backend: store.backend });
    const late = await restarted.write(
      ["ns/x", "ns/y"].map((s) => ({ type: "put", projection: makeProjection(s) })),
    );
    const fresh = cacheOver(restarted);
    await fresh.whenSynced();
    expect(fresh.revision).toBe(late);
    const sub = fresh.subscribe({
      view: "effective",
      resumeRevision: late,
      onEvents: noop,
      onClose: noop,
    });
    expect(sub.initial.kind).toBe("replay");
    if (sub.initial.kind === "replay") {
      expect(sub.initial.events.map((e) => `${e.type}:${e.service}@${e.revision}`)).toEqual([
        `upsert:ns/x@${late}`,
        `upsert:ns/y@${late}`,
      ]);
    }
  });

  it("trims its history by whole revisions", async () => {
    const store = createMemoryStore({ origin: "hub" });
    const cache = cacheOver(store, 2);
    await cache.whenSynced();
    const first = await store.write(
      ["ns/a", "ns/b"].map((s) => ({ type: "put", projection: makeProjection(s) })),
    );
    const second = await store.write(
      ["ns/c", "ns/d", "ns/e"].map((s) => ({ type: "put", projection: makeProjection(s) })),
    );
    await waitFor(() => cache.revision === second);
    // Five records against a limit of two: the trim keeps the second batch
    // whole, so a client that applied part of it still gets all of it.
    const services = (resumeRevision: number) => {
      const sub = cache.subscribe({ view: "all", resumeRevision, onEvents: noop, onClose: noop });
      return sub.initial.kind === "replay" ? sub.initial.events.map((e) => e.service) : "snapshot";
    };
    expect(services(second)).toEqual(["ns/c", "ns/d", "ns/e"]);
    expect(services(first)).toEqual(["ns/c", "ns/d", "ns/e"]);
    expect(services(first - 1)).toBe("snapshot");
  });

  it("keeps its subscribers through a store loss, serves new ones the retained view, and publishes the re-listing's sweep to them when it returns", async () => {
    const inner = createMemoryStore({ origin: "hub" });
    await inner.put(makeProjection("ns/a"));
    await inner.put(makeProjection("ns/b"));
    const { store, setDown } = switchableStore(inner);
    const cache = cacheOver(store);
    await cache.whenSynced();
    const before = cache.revision;
    const closed: Error[] = [];
    const seen: CacheEvent[] = [];
    cache.subscribe({
      view: "all",
      resumeRevision: 0,
      onEvents: (events) => seen.push(...events),
      onClose: (e) => closed.push(e),
    });

    setDown(true);
    await waitFor(() => cache.state === "unavailable");
    expect(closed).toEqual([]);
    expect(cache.serving).toBe(true);
    expect(cache.stats().subscribers).toBe(1);
    // A listing cannot be confirmed without the store; a new stream gets the retained view.
    expect(() => cache.snapshot(undefined, "all")).toThrow(StoreUnavailableError);
    const late = cache.subscribe({
      view: "all",
      resumeRevision: 0,
      onEvents: noop,
      onClose: noop,
    });
    expect(late.initial.kind).toBe("snapshot");
    expect(late.initial.revision).toBe(before);
    const retained = late.initial.kind === "snapshot" ? late.initial.entries : [];
    expect(retained.map((e) => e.service)).toEqual(["ns/a", "ns/b"]);
    late.unsubscribe();

    // Changes the registrar cannot see while the store is away.
    await inner.delete("ns/a");
    await inner.put(makeProjection("ns/b", { version: versionAt(9) }));
    await inner.put(makeProjection("ns/c"));
    setDown(false);
    await waitFor(() => cache.state === "synced", 5_000, "re-sync");

    // The open subscriber got the differences, once each, at the listing's revision.
    expect(seen.map((e) => `${e.type}:${e.service}`).sort()).toEqual([
      "delete:ns/a",
      "upsert:ns/b",
      "upsert:ns/c",
    ]);
    expect(new Set(seen.map((e) => e.revision))).toEqual(new Set([cache.revision]));
    expect(closed).toEqual([]);
    const resumed = cache.subscribe({
      view: "all",
      resumeRevision: before,
      onEvents: noop,
      onClose: noop,
    });
    expect(resumed.initial.kind).toBe("replay");
    const events = resumed.initial.kind === "replay" ? resumed.initial.events : [];
    expect(events.map((e: CacheEvent) => `${e.type}:${e.service}`).sort()).toEqual([
      "delete:ns/a",
      "upsert:ns/b",
      "upsert:ns/c",
    ]);
    expect(cache.stats().projections).toBe(2);
  });

  it("says when the store is lost after a sync and when it is back, after the re-listing was published, never at the first sync", async () => {
    const inner = createMemoryStore({ origin: "hub" });
    await inner.put(makeProjection("ns/a"));
    const { store, setDown } = switchableStore(inner);
    setDown(true);
    const cache = cacheOver(store);
    const told: string[] = [];
    cache.onStoreAvailability((unavailable) =>
      told.push(`${unavailable ? "lost" : "back"}:${cache.state}`),
    );
    cache.onStoreAvailability(() => {
      throw new Error("a listener that fails");
    });
    await waitFor(() => cache.state === "unavailable");
    setDown(false);
    await cache.whenSynced();
    expect(told).toEqual([]);
    cache.subscribe({
      view: "all",
      resumeRevision: 0,
      onEvents: (events) => told.push(...events.map((e) => `${e.type}:${e.service}`)),
      onClose: noop,
    });

    setDown(true);
    await waitFor(() => cache.state === "unavailable");
    expect(told).toEqual(["lost:unavailable"]);
    await inner.delete("ns/a");
    setDown(false);
    await waitFor(() => cache.state === "synced", 5_000, "re-sync");
    expect(told).toEqual(["lost:unavailable", "delete:ns/a", "back:synced"]);
  });

  it("holds nothing of the store's listing while it follows the store (its entries carry decoded messages)", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const inner = createMemoryStore({ origin: "hub" });
    for (const name of ["a", "b", "c"]) await inner.put(makeProjection(`ns/${name}`));
    const listed: WeakRef<object>[] = [];
    const store: ConfigStore = {
      ...inner,
      list: async (options) => {
        const listing = await inner.list(options);
        listed.push(new WeakRef(listing), ...listing.entries.map((e) => new WeakRef(e)));
        return listing;
      },
    };
    const cache = cacheOver(store);
    await cache.whenSynced();
    // Two later tasks: a WeakRef's target is kept to the end of the job that made or read it.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    await new Promise((resolve) => setImmediate(resolve));
    expect(cache.state).toBe("synced");
    expect(listed).toHaveLength(4);
    expect(listed.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
    expect(cache.snapshot(undefined, "all").entries.map((e) => e.service)).toEqual([
      "ns/a",
      "ns/b",
      "ns/c",
    ]);
  });

  it("refuses subscribers until its first sync, and after a stop", async () => {
    const inner = createMemoryStore({ origin: "hub" });
    await inner.put(makeProjection("ns/a"));
    const { store, setDown } = switchableStore(inner);
    setDown(true);
    const cache = cacheOver(store);
    await cache.whenSettled();
    expect(cache.state).toBe("unavailable");
    expect(cache.serving).toBe(false);
    const subscribe = () =>
      cache.subscribe({ view: "all", resumeRevision: 0, onEvents: noop, onClose: noop });
    expect(subscribe).toThrow(StoreUnavailableError);
    setDown(false);
    await cache.whenSynced();
    expect(subscribe().initial.kind).toBe("snapshot");
    await cache.stop();
    expect(cache.serving).toBe(false);
    expect(subscribe).toThrow(StoreUnavailableError);
  });

  it("stays silent for changes that do not move the effective winner", async () => {
    const store = createMemoryStore({ origin: "hub" });
    const east = createMemoryStore({ origin: "east", backend: store.backend });
    await store.put(makeProjection("ns/a", { version: versionAt(5) }));
    const cache = cacheOver(store);
    await cache.whenSynced();
    const effective: CacheEvent[] = [];
    const all: CacheEvent[] = [];
    cache.subscribe({
      view: "effective",
      resumeRevision: 0,
      onEvents: (e) => effective.push(...e),
      onClose: noop,
    });
    cache.subscribe({
      view: "all",
      resumeRevision: 0,
      onEvents: (e) => all.push(...e),
      onClose: noop,
    });
    await east.put(makeProjection("ns/a", { version: versionAt(1) })); // older: loses
    await waitFor(() => all.length === 1);
    expect(effective).toEqual([]);
    expect(cache.stats().conflicts).toBe(1);
  });
});
