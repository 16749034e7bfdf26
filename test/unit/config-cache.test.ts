import { afterEach, describe, expect, it } from "vitest";
import { createImportPolicy } from "../../services/common/import-policy.js";
import {
  type CacheEvent,
  type ConfigCache,
  createConfigCache,
} from "../../services/registrar/config-cache.js";
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

  it("closes subscribers when the store is lost, refuses new ones, and re-lists with a sweep when it returns", async () => {
    const inner = createMemoryStore({ origin: "hub" });
    await inner.put(makeProjection("ns/a"));
    await inner.put(makeProjection("ns/b"));
    const { store, setDown } = switchableStore(inner);
    const cache = cacheOver(store);
    await cache.whenSynced();
    const before = cache.revision;
    const closed: Error[] = [];
    cache.subscribe({
      view: "effective",
      resumeRevision: 0,
      onEvents: noop,
      onClose: (e) => closed.push(e),
    });

    setDown(true);
    await waitFor(() => cache.state === "unavailable");
    expect(closed).toHaveLength(1);
    expect(closed[0]).toBeInstanceOf(StoreUnavailableError);
    expect(() =>
      cache.subscribe({ view: "all", resumeRevision: 0, onEvents: noop, onClose: noop }),
    ).toThrow(StoreUnavailableError);

    // Changes the registrar cannot see while the store is away.
    await inner.delete("ns/a");
    await inner.put(makeProjection("ns/b", { version: versionAt(9) }));
    await inner.put(makeProjection("ns/c"));
    setDown(false);
    await waitFor(() => cache.state === "synced", 5_000, "re-sync");

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
