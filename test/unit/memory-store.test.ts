/**
 * What is particular to the embedded store: its bounded MVCC history, its
 * asynchronous watch delivery, and its options. The behaviour it shares with
 * the etcd store is in test/contract.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import {
  type ConfigStore,
  StoreCompactedError,
  type StoreEvent,
} from "../../services/registrar/store/config-store.js";
import {
  createMemoryBackend,
  createMemoryStore,
} from "../../services/registrar/store/memory-store.js";
import { waitFor } from "../support/wait.js";

function projection(service: string, version: string) {
  return create(ServiceConfigProjectionSchema, { service, version });
}

/** A small deterministic pseudo-random generator (mulberry32). */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The listing of `store` at `revision` as `service=version` strings, sorted. */
async function snapshot(store: ConfigStore, revision: number): Promise<string[]> {
  const listed = await store.list({ revision });
  return listed.entries.map((e) => `${e.service}=${e.projection.version}`).sort();
}

describe("memory store", () => {
  it("starts at revision 1 like a fresh etcd", async () => {
    const store = createMemoryStore({ origin: "hub" });
    expect(store.kind).toBe("memory");
    expect(await store.revision()).toBe(1);
    expect(await store.list()).toEqual({ entries: [], revision: 1, more: false });
  });

  it("keeps exactly historyLimit revisions readable and watchable", async () => {
    const store = createMemoryStore({ origin: "hub", historyLimit: 3 });
    for (let i = 1; i <= 4; i++) await store.put(projection("shop/web", `v${i}`));
    expect(await store.revision()).toBe(5);
    expect(store.backend.compactRevision).toBe(3);
    const error = await store.list({ revision: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreCompactedError);
    expect((error as StoreCompactedError).compactRevision).toBe(3);
    expect(await snapshot(store, 3)).toEqual(["shop/web=v2"]);

    const errors: Error[] = [];
    store.watch(1, { onEvents: () => {}, onError: (e) => errors.push(e) });
    await waitFor(() => errors.length > 0);
    expect(errors[0]).toBeInstanceOf(StoreCompactedError);

    const events: StoreEvent[] = [];
    store.watch(2, { onEvents: (batch) => events.push(...batch), onError: (e) => errors.push(e) });
    await waitFor(() => events.length === 3);
    expect(events.map((e) => e.revision)).toEqual([3, 4, 5]);
    expect(errors).toHaveLength(1);
  });

  it("reads every retained revision exactly as it was, under random writes", async () => {
    const next = random(42);
    const historyLimit = 25;
    const store = createMemoryStore({ origin: "hub", historyLimit });
    const services = ["a/a", "a/b", "b/a", "b/b", "c/c"];
    const model = new Map<string, string>();
    const snapshots = new Map<number, string[]>([[1, []]]);
    const changes = new Map<number, string>();
    for (let step = 0; step < 300; step++) {
      const service = services[Math.floor(next() * services.length)] as string;
      if (next() < 0.3) {
        const revision = await store.delete(service);
        expect(revision === undefined).toBe(!model.has(service));
        if (revision === undefined) continue;
        model.delete(service);
        changes.set(revision, `delete ${service}`);
        snapshots.set(revision, [...model].map(([s, v]) => `${s}=${v}`).sort());
      } else {
        const version = `v${step}`;
        const revision = await store.put(projection(service, version));
        model.set(service, version);
        changes.set(revision, `put ${service}=${version}`);
        snapshots.set(revision, [...model].map(([s, v]) => `${s}=${v}`).sort());
      }
      const current = await store.revision();
      const oldest = Math.max(1, current - historyLimit + 1);
      expect(store.backend.compactRevision).toBe(oldest);
      if (step % 10 !== 0) continue;
      for (let revision = oldest; revision <= current; revision++) {
        expect(await snapshot(store, revision), `at revision ${revision}`).toEqual(
          snapshots.get(revision),
        );
      }
      await expect(store.list({ revision: oldest - 1 })).rejects.toThrow(
        oldest > 1 ? StoreCompactedError : RangeError,
      );
      const replay: StoreEvent[] = [];
      const watch = store.watch(oldest - 1, {
        onEvents: (batch) => replay.push(...batch),
        onError: (e) => {
          throw e;
        },
      });
      // Revision 1 is the empty start, not a change.
      const firstChange = Math.max(2, oldest);
      await waitFor(() => replay.length === current - firstChange + 1);
      await watch.cancel();
      const expected = [];
      for (let revision = firstChange; revision <= current; revision++) {
        expected.push(changes.get(revision));
      }
      expect(
        replay.map((e) =>
          e.type === "put"
            ? `put ${e.entry.service}=${e.entry.projection.version}`
            : `delete ${e.service}`,
        ),
      ).toEqual(expected);
    }
  });

  it("stays bounded and exact over many writes", async () => {
    const store = createMemoryStore({ origin: "hub", historyLimit: 10 });
    const services = ["a/a", "b/b", "c/c"];
    const versions: string[] = [];
    for (let i = 0; i < 5_000; i++) {
      const service = services[i % 3] as string;
      if (i % 7 === 6) await store.delete(service);
      else await store.put(projection(service, `v${i}`));
      versions[await store.revision()] = i % 7 === 6 ? `delete ${service}` : `put ${service}=v${i}`;
    }
    const current = await store.revision();
    expect(store.backend.compactRevision).toBe(current - 9);
    const replay: StoreEvent[] = [];
    store.watch(current - 10, { onEvents: (batch) => replay.push(...batch), onError: () => {} });
    await waitFor(() => replay.length === 10);
    expect(
      replay.map((e) =>
        e.type === "put"
          ? `put ${e.entry.service}=${e.entry.projection.version}`
          : `delete ${e.service}`,
      ),
    ).toEqual(versions.slice(current - 9));
    expect((await store.list()).entries.map((e) => e.service)).toEqual(
      services.filter((s) => !versions.slice(current - 2).includes(`delete ${s}`)),
    );
  });

  it("delivers watch events asynchronously and in order, never inside the write", async () => {
    const store = createMemoryStore({ origin: "hub" });
    const seen: number[] = [];
    store.watch(1, {
      onEvents: (batch) => seen.push(...batch.map((e) => e.revision)),
      onError: () => {},
    });
    const key = `${store.prefix}/clusters/hub/config/${Buffer.from("shop/web").toString("base64url")}`;
    store.putRaw(key, toBinary(ServiceConfigProjectionSchema, projection("shop/web", "v1")));
    store.putRaw(key, toBinary(ServiceConfigProjectionSchema, projection("shop/web", "v2")));
    expect(seen).toEqual([]);
    await waitFor(() => seen.length === 2);
    expect(seen).toEqual([2, 3]);
  });

  it("keeps a watch going when its handler throws", async () => {
    const store = createMemoryStore({ origin: "hub" });
    const seen: number[] = [];
    store.watch(1, {
      onEvents: (batch) => {
        seen.push(...batch.map((e) => e.revision));
        throw new Error("handler bug");
      },
      onError: () => {},
    });
    await store.put(projection("shop/web", "v1"));
    await waitFor(() => seen.length === 1);
    await store.put(projection("shop/web", "v2"));
    await waitFor(() => seen.length === 2);
  });

  it("shares one backend between stores of different origins", async () => {
    const backend = createMemoryBackend({ historyLimit: 100 });
    const hub = createMemoryStore({ origin: "hub", backend });
    const spoke = createMemoryStore({ origin: "spoke", backend });
    const first = await hub.put(projection("shop/web", "v1"));
    const second = await spoke.put(projection("shop/web", "v2"));
    expect(second).toBe(first + 1);
    const listed = await spoke.list();
    expect(listed.entries.map((e) => `${e.origin} ${e.projection.originCluster}`)).toEqual([
      "hub hub",
      "spoke spoke",
    ]);
    expect(() => createMemoryStore({ origin: "x", backend, historyLimit: 5 })).toThrow(TypeError);
  });

  it("checks its options and arguments", async () => {
    expect(() => createMemoryBackend({ historyLimit: 0 })).toThrow(RangeError);
    expect(() => createMemoryStore({ origin: "hub", prefix: "relative" })).toThrow(TypeError);
    const store = createMemoryStore({ origin: "hub" });
    expect(() => store.backend.compact(5)).toThrow(RangeError);
    expect(() => store.watch(-1, { onEvents: () => {}, onError: () => {} })).toThrow(RangeError);
    await expect(store.list({ limit: 0 })).rejects.toThrow(RangeError);
    await expect(store.list({ revision: 0 })).rejects.toThrow(RangeError);
  });
});
