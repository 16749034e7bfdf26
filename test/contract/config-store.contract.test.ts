/**
 * The ConfigStore contract, run against both implementations: the embedded
 * memory store and the etcd store on a real etcd. Each test works under its
 * own key prefix, so tests are independent of each other and of what earlier
 * tests left in etcd.
 */
import { randomUUID } from "node:crypto";
import { toBinary } from "@bufbuild/protobuf";
import { Etcd3 } from "etcd3";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import {
  type ConfigStore,
  FencedWriteError,
  MAX_WRITE_BATCH,
  type ProjectionFilter,
  StoreCompactedError,
  type StoreEvent,
  StoreUnavailableError,
} from "../../services/registrar/store/config-store.js";
import { compareKeys } from "../../services/registrar/store/decode-entry.js";
import { createEtcdStore } from "../../services/registrar/store/etcd-store.js";
import {
  createMemoryBackend,
  createMemoryStore,
} from "../../services/registrar/store/memory-store.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import { type EtcdHandle, startEtcd } from "../support/etcd.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

/** The data of one test: stores of any origin over shared data, and raw access to it. */
interface StoreWorld {
  /** Creates a store of `origin` over this test's data and prefix; closed after the test. */
  store(origin: string): ConfigStore;
  /** Writes raw bytes under any key, bypassing the store; resolves to the revision. */
  putRaw(key: string, value: Uint8Array): Promise<number>;
  /** Compacts the backing data's history up to `revision`. */
  compact(revision: number): Promise<void>;
}

/** One implementation under test. */
interface StoreTarget {
  readonly name: string;
  setup(): Promise<void>;
  teardown(): Promise<void>;
  createWorld(prefix: string): StoreWorld;
}

const T1 = versionAt(1);
const T2 = versionAt(2);

/** A valid projection of `service` at `version`. */
function projection(service: string, version = T1): ServiceConfigProjection {
  return makeProjection(service, { version });
}

/** A short, comparable description of an event. */
function describeEvent(event: StoreEvent): string {
  return event.type === "put"
    ? `put ${event.entry.origin} ${event.entry.service} ${event.entry.projection.version} @${event.revision}`
    : `delete ${event.origin} ${event.service} @${event.revision}`;
}

/** Watches `store` and records what arrives. */
function record(store: ConfigStore, afterRevision: number, filter?: ProjectionFilter) {
  const events: StoreEvent[] = [];
  const errors: Error[] = [];
  const watch = store.watch(
    afterRevision,
    {
      onEvents: (batch) => {
        expect(batch.length).toBeGreaterThan(0);
        events.push(...batch);
      },
      onError: (error) => errors.push(error),
    },
    filter,
  );
  return {
    events,
    errors,
    watch,
    described: () => events.map(describeEvent),
    /** Waits until `count` events have arrived. */
    waitForEvents: (count: number) =>
      waitFor(() => events.length >= count, 10_000, `${count} watch events`),
  };
}

const GARBAGE = new Uint8Array([0xff, 0xff, 0xff, 0xff]);

/** Runs the ConfigStore contract against one implementation. */
function describeConfigStoreContract(target: StoreTarget): void {
  describe(`ConfigStore contract: ${target.name}`, () => {
    let world: StoreWorld;
    let prefix: string;
    const open: ConfigStore[] = [];

    beforeAll(() => target.setup());
    afterAll(() => target.teardown());
    afterEach(async () => {
      await Promise.all(open.splice(0).map((store) => store.close()));
    });

    /** Starts a test: a fresh prefix and world. */
    const fresh = (): void => {
      prefix = `/contract-${randomUUID().slice(0, 8)}/aether/v1`;
      const created = target.createWorld(prefix);
      world = {
        ...created,
        store: (origin) => {
          const store = created.store(origin);
          open.push(store);
          return store;
        },
      };
    };

    it("round-trips a projection, stamped with the writer's origin", async () => {
      fresh();
      const hub = world.store("hub");
      expect(hub.kind).toBe(target.name);
      expect(hub.origin).toBe("hub");
      expect(hub.prefix).toBe(prefix);
      const written = makeProjection("shop/web", { version: T1, origin: "somebody-else" });
      const revision = await hub.put(written);
      const listed = await hub.list();
      expect(listed.more).toBe(false);
      expect(listed.revision).toBeGreaterThanOrEqual(revision);
      expect(listed.entries).toHaveLength(1);
      const [entry] = listed.entries;
      expect(entry?.origin).toBe("hub");
      expect(entry?.service).toBe("shop/web");
      expect(entry?.modRevision).toBe(revision);
      expect(entry?.projection).toEqual(makeProjection("shop/web", { version: T1, origin: "hub" }));
      // The caller's message is not modified by the write.
      expect(written.originCluster).toBe("somebody-else");
      expect(await hub.revision()).toBe(revision);
    });

    it("counts one revision per write, identical writes included, and none for a no-op delete", async () => {
      fresh();
      const hub = world.store("hub");
      const start = await hub.revision();
      const first = await hub.put(projection("shop/web"));
      const second = await hub.put(projection("shop/web"));
      expect([first, second]).toEqual([start + 1, start + 2]);
      expect(await hub.delete("shop/web")).toBe(start + 3);
      expect(await hub.delete("shop/web")).toBeUndefined();
      expect(await hub.delete("shop/never-written")).toBeUndefined();
      expect(await hub.revision()).toBe(start + 3);
      expect((await hub.list()).entries).toEqual([]);
    });

    it("rejects services that are not namespace/name", async () => {
      fresh();
      const hub = world.store("hub");
      for (const service of ["web", "a/b/c", "/web", "shop/", ""]) {
        await expect(hub.put(projection(service)), service).rejects.toThrow(TypeError);
        await expect(hub.delete(service), service).rejects.toThrow(TypeError);
      }
      expect((await hub.list()).entries).toEqual([]);
    });

    it("lists one origin or every origin, each entry under its own origin", async () => {
      fresh();
      const hub = world.store("hub");
      const spoke = world.store("spoke");
      await hub.put(projection("shop/web", T1));
      await spoke.put(projection("shop/web", T2));
      await spoke.put(projection("shop/cart", T2));
      const describe = (
        entries: { origin: string; service: string; projection: ServiceConfigProjection }[],
      ) =>
        entries.map(
          (e) => `${e.origin} ${e.service} ${e.projection.originCluster} ${e.projection.version}`,
        );

      expect(describe((await hub.list({ origin: "hub" })).entries)).toEqual([
        `hub shop/web hub ${T1}`,
      ]);
      const spokes = describe((await hub.list({ origin: "spoke" })).entries);
      expect(spokes.sort()).toEqual([`spoke shop/cart spoke ${T2}`, `spoke shop/web spoke ${T2}`]);
      const all = await spoke.list();
      expect(describe(all.entries).sort()).toEqual([
        `hub shop/web hub ${T1}`,
        `spoke shop/cart spoke ${T2}`,
        `spoke shop/web spoke ${T2}`,
      ]);
      expect((await hub.list({ origin: "nobody" })).entries).toEqual([]);
    });

    it("filters by services, within one origin and across origins", async () => {
      fresh();
      const hub = world.store("hub");
      const spoke = world.store("spoke");
      for (const service of ["shop/web", "shop/cart", "pay/api"])
        await hub.put(projection(service));
      for (const service of ["shop/web", "pay/api"]) await spoke.put(projection(service));
      const keys = (entries: { origin: string; service: string }[]) =>
        entries.map((e) => `${e.origin} ${e.service}`).sort();

      const both = await hub.list({ services: new Set(["shop/web", "pay/api", "no/such"]) });
      expect(keys(both.entries)).toEqual([
        "hub pay/api",
        "hub shop/web",
        "spoke pay/api",
        "spoke shop/web",
      ]);
      const one = await hub.list({ origin: "spoke", services: new Set(["shop/web", "shop/cart"]) });
      expect(keys(one.entries)).toEqual(["spoke shop/web"]);
      const everything = await hub.list({ services: new Set() });
      expect(everything.entries).toHaveLength(5);
    });

    it("pages through 250 entries in key order with after and limit, without gaps or repeats", async () => {
      fresh();
      const stores = ["a", "b-1", "b"].map((origin) => world.store(origin));
      const written: string[] = [];
      for (let i = 0; i < 250; i++) {
        const store = stores[i % stores.length] as ConfigStore;
        const service = `ns${i % 7}/svc-${i}`;
        await store.put(projection(service));
        written.push(projectionKey(prefix, store.origin, service));
      }
      const reader = stores[0] as ConfigStore;
      const full = await reader.list();
      const keyOf = (e: { origin: string; service: string }) =>
        projectionKey(prefix, e.origin, e.service);
      expect(full.entries.map(keyOf)).toEqual([...written].sort(compareKeys));

      const seen: string[] = [];
      let after: { origin: string; service: string } | undefined;
      let pages = 0;
      for (;;) {
        const page = await reader.list({
          revision: full.revision,
          limit: 7,
          ...(after ? { after } : {}),
        });
        expect(page.revision).toBe(full.revision);
        pages++;
        seen.push(...page.entries.map(keyOf));
        if (pages === 1) {
          // A write after the first page does not show in the pinned listing.
          await reader.put(projection("aaa/late-comer"));
        }
        const last = page.entries[page.entries.length - 1];
        if (!page.more) break;
        expect(page.entries).toHaveLength(7);
        after = { origin: last?.origin ?? "", service: last?.service ?? "" };
      }
      expect(pages).toBe(Math.ceil(250 / 7));
      expect(seen).toEqual(full.entries.map(keyOf));

      // An exact multiple of the limit ends with more=false, not with an empty page.
      const exact = await reader.list({ origin: "a", revision: full.revision, limit: 84 });
      expect(exact.entries).toHaveLength(84);
      expect(exact.more).toBe(false);
      // `after` outside the origin's range: before it starts at the beginning, past it is empty.
      const before = await reader.list({ origin: "b", after: { origin: "a", service: "zz/zz" } });
      expect(before.entries.map(keyOf)).toEqual(
        full.entries.filter((e) => e.origin === "b").map(keyOf),
      );
      const past = await reader.list({ origin: "a", after: { origin: "b", service: "a/a" } });
      expect(past.entries).toEqual([]);
    });

    it("lists at an older revision as the store was then", async () => {
      fresh();
      const hub = world.store("hub");
      await hub.put(projection("shop/web", T1));
      const then = await hub.put(projection("shop/cart", T1));
      await hub.put(projection("shop/web", T2));
      await hub.delete("shop/cart");
      await hub.put(projection("shop/new", T2));

      const old = await hub.list({ revision: then });
      expect(old.revision).toBe(then);
      expect(old.entries.map((e) => `${e.service} ${e.projection.version}`).sort()).toEqual([
        `shop/cart ${T1}`,
        `shop/web ${T1}`,
      ]);
      const now = await hub.list();
      expect(now.entries.map((e) => `${e.service} ${e.projection.version}`).sort()).toEqual([
        `shop/new ${T2}`,
        `shop/web ${T2}`,
      ]);
      await expect(hub.list({ revision: now.revision + 1000 })).rejects.toThrow(RangeError);
    });

    it("never lets a value claim another origin: the key decides, and restamping is counted", async () => {
      fresh();
      const hub = world.store("hub");
      const reader = world.store("spoke");
      await hub.put(projection("shop/web"));
      const forged = makeProjection("shop/cart", { version: T2, origin: "evil" });
      forged.service = "evil/svc";
      const forgedAt = await world.putRaw(
        projectionKey(prefix, "hub", "shop/cart"),
        encode(forged),
      );
      const watcher = record(reader, forgedAt - 1);
      const listed = await reader.list();
      const cart = listed.entries.find((e) => e.service === "shop/cart");
      expect(cart?.origin).toBe("hub");
      expect(cart?.projection.originCluster).toBe("hub");
      expect(cart?.projection.service).toBe("shop/cart");
      expect(cart?.projection.version).toBe(T2);
      expect(listed.entries.every((e) => e.projection.originCluster === "hub")).toBe(true);
      expect(reader.counters.restamped).toBe(1);

      await watcher.waitForEvents(1);
      const [event] = watcher.events;
      expect(event?.type === "put" && event.entry.projection.originCluster).toBe("hub");
      expect(event?.type === "put" && event.entry.projection.service).toBe("shop/cart");
      // The same stored value is counted once, however often it is read.
      await reader.list();
      expect(reader.counters.restamped).toBe(1);
    });

    it("skips and counts corrupt values and malformed keys, ignores other registries' subtrees, and serves the rest, in list and watch", async () => {
      fresh();
      const hub = world.store("hub");
      const start = await hub.revision();
      const watcher = record(world.store("spoke"), start);
      await hub.put(projection("shop/a"));
      await world.putRaw(projectionKey(prefix, "hub", "shop/b"), GARBAGE);
      await world.putRaw(`${prefix}/clusters/hub/config/not*base64`, encode(projection("shop/x")));
      // Another registry (endpoints) sharing the prefix: not config, not an error either.
      await world.putRaw(`${prefix}/clusters/hub/endpoints/abc`, encode(projection("shop/y")));
      await hub.put(projection("shop/c"));
      await world.putRaw(`${prefix}/elsewhere/key`, GARBAGE);

      const lister = world.store("lister");
      const listed = await lister.list();
      expect(listed.entries.map((e) => e.service)).toEqual(["shop/a", "shop/c"]);
      expect(lister.counters).toEqual({ decodeErrors: 1, invalidKeys: 1, restamped: 0 });
      expect(
        (
          await lister.list({
            origin: "hub",
            limit: 1,
            after: { origin: "hub", service: "shop/a" },
          })
        ).entries.map((e) => e.service),
      ).toEqual(["shop/c"]);
      expect(lister.counters).toEqual({ decodeErrors: 1, invalidKeys: 1, restamped: 0 });

      await watcher.waitForEvents(2);
      expect(watcher.events.map((e) => e.type === "put" && e.entry.service)).toEqual([
        "shop/a",
        "shop/c",
      ]);
      expect(watcher.errors).toEqual([]);
    });

    it("watches exactly the changes after a revision, in order, puts and deletes", async () => {
      fresh();
      const hub = world.store("hub");
      const r1 = await hub.put(projection("shop/a", T1));
      const r2 = await hub.put(projection("shop/b", T1));
      const watcher = record(hub, r1);
      const r3 = await hub.delete("shop/a");
      const r4 = await hub.put(projection("shop/b", T2));
      const r5 = await hub.put(projection("shop/b", T2));
      await watcher.waitForEvents(4);
      expect(watcher.described()).toEqual([
        `put hub shop/b ${T1} @${r2}`,
        `delete hub shop/a @${r3}`,
        `put hub shop/b ${T2} @${r4}`,
        `put hub shop/b ${T2} @${r5}`,
      ]);
      expect(watcher.events[0]?.type === "put" && watcher.events[0].entry.modRevision).toBe(r2);
      // A watch from the latest revision sees only what comes next.
      const later = record(hub, r5);
      const r6 = await hub.put(projection("shop/c"));
      await later.waitForEvents(1);
      await watcher.waitForEvents(5);
      expect(later.described()).toEqual([`put hub shop/c ${T1} @${r6}`]);
      expect(watcher.events).toHaveLength(5);

      // After cancel, nothing more arrives.
      await watcher.watch.cancel();
      await hub.put(projection("shop/d"));
      await later.waitForEvents(2);
      expect(watcher.events).toHaveLength(5);
      expect([...watcher.errors, ...later.errors]).toEqual([]);
    });

    it("writes a batch of puts and deletes atomically at one revision, seen by a watch as one batch", async () => {
      fresh();
      const hub = world.store("hub");
      const r1 = await hub.put(projection("shop/old", T1));
      const r2 = await hub.put(projection("shop/b", T1));
      const batches: string[][] = [];
      const watch = hub.watch(r2, {
        onEvents: (events) => batches.push(events.map(describeEvent)),
        onError: () => {},
      });
      const revision = await hub.write([
        { type: "put", projection: makeProjection("shop/a", { version: T2, origin: "x" }) },
        { type: "delete", service: "shop/old" },
        { type: "put", projection: projection("shop/b", T2) },
        { type: "delete", service: "shop/never-written" },
      ]);
      expect(revision).toBe(r2 + 1);
      expect(await hub.revision()).toBe(revision);
      const listed = await hub.list();
      expect(
        listed.entries.map((e) => [e.service, e.origin, e.projection.version, e.modRevision]),
      ).toEqual(
        [
          ["shop/a", "hub", T2, revision],
          ["shop/b", "hub", T2, revision],
        ].sort((a, b) =>
          compareKeys(
            projectionKey(prefix, "hub", a[0] as string),
            projectionKey(prefix, "hub", b[0] as string),
          ),
        ),
      );
      await waitFor(() => batches.length > 0);
      expect(batches).toEqual([
        [
          `put hub shop/a ${T2} @${revision}`,
          `delete hub shop/old @${revision}`,
          `put hub shop/b ${T2} @${revision}`,
        ],
      ]);
      // The revision before the batch still reads as it was.
      expect((await hub.list({ revision: r2 })).entries.map((e) => e.service).sort()).toEqual([
        "shop/b",
        "shop/old",
      ]);
      expect(r1).toBeLessThan(r2);
      // A batch that changes nothing, and an empty one, leave the revision alone.
      expect(await hub.write([{ type: "delete", service: "shop/never-written" }])).toBe(revision);
      expect(await hub.write([])).toBe(revision);
      await watch.cancel();
    });

    it("rejects a batch with a bad or repeated service, too many changes, or a broken fence, writing nothing", async () => {
      fresh();
      const hub = world.store("hub");
      await hub.put(projection("shop/keep"));
      const start = await hub.revision();
      const bad = [
        [
          { type: "put", projection: projection("shop/a") },
          { type: "delete", service: "web" },
        ],
        [
          { type: "put", projection: projection("shop/a") },
          { type: "delete", service: "shop/a" },
        ],
      ] as const;
      for (const changes of bad) {
        await expect(hub.write(changes)).rejects.toThrow(TypeError);
      }
      const tooMany = Array.from({ length: MAX_WRITE_BATCH + 1 }, (_, i) => ({
        type: "put" as const,
        projection: projection(`shop/s${i}`),
      }));
      await expect(hub.write(tooMany)).rejects.toThrow(RangeError);
      const fenceKey = `${prefix}/election/hub`;
      const created = await world.putRaw(fenceKey, new Uint8Array([1]));
      const fenced = await hub
        .write(
          [
            { type: "put", projection: projection("shop/a") },
            { type: "delete", service: "shop/keep" },
          ],
          { fence: { key: fenceKey, createRevision: created + 1 } },
        )
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(fenced).toBeInstanceOf(FencedWriteError);
      expect((await hub.list()).entries.map((e) => e.service)).toEqual(["shop/keep"]);
      expect(await hub.revision()).toBe(created);
      expect(created).toBe(start + 1);
      // The same batch lands while the fence holds.
      const landed = await hub.write(
        [
          { type: "put", projection: projection("shop/a") },
          { type: "delete", service: "shop/keep" },
        ],
        { fence: { key: fenceKey, createRevision: created } },
      );
      expect(landed).toBe(created + 1);
      expect((await hub.list()).entries.map((e) => e.service)).toEqual(["shop/a"]);
    });

    it("filters a watch by origin and by services", async () => {
      fresh();
      const hub = world.store("hub");
      const spoke = world.store("spoke");
      const start = await hub.revision();
      const hubOnly = record(spoke, start, { origin: "hub" });
      const webOnly = record(spoke, start, { services: new Set(["shop/web"]) });
      const spokeWeb = record(spoke, start, { origin: "spoke", services: new Set(["shop/web"]) });
      await hub.put(projection("shop/web"));
      await spoke.put(projection("shop/web"));
      await hub.put(projection("shop/cart"));
      await spoke.delete("shop/web");
      const end = await spoke.put(projection("shop/last"));
      const everything = record(spoke, start);
      await everything.waitForEvents(5);
      await waitFor(
        () =>
          hubOnly.events.length >= 2 && webOnly.events.length >= 3 && spokeWeb.events.length >= 2,
      );
      const brief = (w: ReturnType<typeof record>) =>
        w.events.map((e) =>
          e.type === "put"
            ? `put ${e.entry.origin} ${e.entry.service}`
            : `delete ${e.origin} ${e.service}`,
        );
      expect(brief(hubOnly)).toEqual(["put hub shop/web", "put hub shop/cart"]);
      expect(brief(webOnly)).toEqual([
        "put hub shop/web",
        "put spoke shop/web",
        "delete spoke shop/web",
      ]);
      expect(brief(spokeWeb)).toEqual(["put spoke shop/web", "delete spoke shop/web"]);
      expect(everything.events[everything.events.length - 1]?.revision).toBe(end);
    });

    it("rejects reads and watches from a compacted revision, and serves the ones after it", async () => {
      fresh();
      const hub = world.store("hub");
      const r1 = await hub.put(projection("shop/a", T1));
      await hub.put(projection("shop/a", T2));
      const r3 = await hub.put(projection("shop/b", T1));
      const r4 = await hub.put(projection("shop/c", T1));
      await world.compact(r3);

      const listError = await hub.list({ revision: r1 }).catch((error: unknown) => error);
      expect(listError).toBeInstanceOf(StoreCompactedError);
      expect((listError as StoreCompactedError).compactRevision).toBe(r3);
      const atCompaction = await hub.list({ revision: r3 });
      expect(atCompaction.entries.map((e) => `${e.service} ${e.projection.version}`)).toEqual([
        `shop/a ${T2}`,
        `shop/b ${T1}`,
      ]);

      const tooOld = record(hub, r1);
      await waitFor(() => tooOld.errors.length > 0, 10_000, "the compaction error");
      expect(tooOld.errors[0]).toBeInstanceOf(StoreCompactedError);
      expect((tooOld.errors[0] as StoreCompactedError).compactRevision).toBe(r3);
      expect(tooOld.events).toEqual([]);

      const justInTime = record(hub, r3 - 1);
      await justInTime.waitForEvents(2);
      expect(justInTime.described()).toEqual([
        `put hub shop/b ${T1} @${r3}`,
        `put hub shop/c ${T1} @${r4}`,
      ]);
      expect(justInTime.errors).toEqual([]);
    });

    it("is unavailable after close", async () => {
      fresh();
      const hub = world.store("hub");
      await hub.put(projection("shop/a"));
      const watcher = record(hub, 0);
      await hub.close();
      await expect(hub.ping()).rejects.toThrow(StoreUnavailableError);
      await expect(hub.list()).rejects.toThrow(StoreUnavailableError);
      await expect(hub.put(projection("shop/b"))).rejects.toThrow(StoreUnavailableError);
      const afterClose = record(hub, 0);
      await waitFor(
        () => afterClose.errors.length > 0,
        5_000,
        "an error from a watch on a closed store",
      );
      expect(afterClose.errors[0]).toBeInstanceOf(StoreUnavailableError);
      expect(watcher.errors).toEqual([]);
    });
  });
}

/** The protobuf binary encoding of a projection, as a foreign writer would store it. */
function encode(value: ServiceConfigProjection): Uint8Array {
  return toBinary(ServiceConfigProjectionSchema, value);
}

describeConfigStoreContract({
  name: "memory",
  setup: async () => {},
  teardown: async () => {},
  createWorld(prefix) {
    const backend = createMemoryBackend();
    const writer = createMemoryStore({ origin: "raw-writer", prefix, backend });
    return {
      store: (origin) => createMemoryStore({ origin, prefix, backend }),
      putRaw: async (key, value) => writer.putRaw(key, value),
      compact: async (revision) => backend.compact(revision),
    };
  },
});

let etcd: EtcdHandle | undefined;
let raw: Etcd3 | undefined;
describeConfigStoreContract({
  name: "etcd",
  setup: async () => {
    etcd = await startEtcd();
    raw = new Etcd3({ hosts: etcd.endpoint });
  },
  teardown: async () => {
    raw?.close();
    await etcd?.stop();
  },
  createWorld(prefix) {
    const endpoint = etcd?.endpoint ?? "";
    const client = raw as Etcd3;
    return {
      store: (origin) => createEtcdStore({ origin, endpoints: [endpoint], prefix }),
      putRaw: async (key, value) => {
        const response = await client.kv.put({ key: Buffer.from(key), value: Buffer.from(value) });
        return Number(response.header.revision);
      },
      compact: async (revision) => {
        await client.kv.compact({ revision, physical: true });
      },
    };
  },
});
