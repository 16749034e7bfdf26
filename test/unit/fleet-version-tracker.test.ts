/**
 * The fleet view's version tracker over a fake cache: it subscribes only
 * once the cache is synced, keeps each service's history across a lost
 * store (resuming after the last revision), and forgets deleted services.
 */
import { describe, expect, it } from "vitest";
import type {
  CacheEvent,
  CacheState,
  InitialSync,
  SubscribeOptions,
} from "../../services/registrar/cache/config-cache.js";
import { createVersionTracker } from "../../services/registrar/fleet/version-tracker.js";
import { cachedEntry } from "../support/cache-entries.js";
import { versionAt } from "../support/projections.js";

/** A cache that hands out the initial syncs the test queues (a unit-test fake). */
function fakeCache() {
  const opened: SubscribeOptions[] = [];
  const initials: InitialSync[] = [];
  const cache = {
    state: "starting" as CacheState,
    subscribe(options: SubscribeOptions) {
      opened.push(options);
      const initial = initials.shift() ?? { kind: "replay", events: [], revision: 0 };
      return { initial, unsubscribe: () => undefined };
    },
  };
  return { cache, opened, initials };
}

const upsert = (service: string, n: number, revision: number): CacheEvent => ({
  type: "upsert",
  origin: "hub",
  service,
  entry: cachedEntry("hub", service, versionAt(n), revision),
  revision,
});

/** A snapshot of service a/x at version `n`, consistent with `revision`. */
const snapshotOf = (n: number, revision: number): InitialSync => ({
  kind: "snapshot",
  entries: [cachedEntry("hub", "a/x", versionAt(n), 1)],
  revision,
});

describe("version tracker", () => {
  it("subscribes once the cache is synced, keeps history across a loss, forgets deletes", () => {
    const { cache, opened, initials } = fakeCache();
    const tracker = createVersionTracker(cache);
    expect(opened).toHaveLength(0);
    cache.state = "synced";
    initials.push(snapshotOf(1, 5));
    expect([...tracker.versions().keys()]).toEqual(["a/x"]);
    opened[0]?.onEvents([upsert("a/x", 2, 6), upsert("b/y", 1, 7)]);
    opened[0]?.onClose(new Error("store lost"));

    cache.state = "unavailable";
    tracker.resume();
    expect(opened).toHaveLength(1);
    cache.state = "synced";
    initials.push(snapshotOf(3, 9));
    const versions = tracker.versions();
    expect(opened[1]?.resumeRevision).toBe(7);
    expect(opened[1]?.view).toBe("effective");
    expect(versions.get("a/x")?.history.map((v) => v.version)).toEqual([
      versionAt(3),
      versionAt(2),
      versionAt(1),
    ]);
    expect(versions.has("b/y")).toBe(false);
    opened[1]?.onEvents([{ type: "delete", origin: "hub", service: "a/x", revision: 10 }]);
    expect(tracker.versions().size).toBe(0);
  });
});
