/**
 * The StatusStore contract (published import status), run against both
 * implementations: over a shared memory backend and on a real etcd. Each
 * test works under its own key prefix. Also checks that the config store
 * beside it skips status keys without counting them as invalid keys.
 */
import { randomUUID } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { Etcd3 } from "etcd3";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  ImportStatusReplicaSchema,
  ServiceImportStatusSchema,
} from "../../gen/aether/registry/v1/fleet_pb.js";
import { replicaHeaderKey, serviceStatusKey } from "../../services/common/status-layout.js";
import {
  type ConfigStore,
  MAX_WRITE_BATCH,
  StoreCompactedError,
} from "../../services/registrar/store/config-store.js";
import { createEtcdStore } from "../../services/registrar/store/etcd-store.js";
import {
  createMemoryBackend,
  createMemoryStore,
} from "../../services/registrar/store/memory-store.js";
import type {
  StatusEntry,
  StatusEvent,
  StatusStore,
} from "../../services/registrar/store/status-store.js";
import { createEtcdStatusStore } from "../../services/registrar/store/status-store-etcd.js";
import { createMemoryStatusStore } from "../../services/registrar/store/status-store-memory.js";
import { type EtcdHandle, startEtcd } from "../support/etcd.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

/** Stores over one test's data, and raw access to it. */
interface StatusWorld {
  status(cluster: string): StatusStore;
  config(origin: string): ConfigStore;
  putRaw(key: string, value: Uint8Array): Promise<number>;
  compact(revision: number): Promise<void>;
}

interface StatusTarget {
  readonly name: "memory" | "etcd";
  setup(): Promise<void>;
  teardown(): Promise<void>;
  createWorld(prefix: string): StatusWorld;
}

const GARBAGE = new Uint8Array([0xff, 0xff, 0xff, 0xff]);

function header(revision: number): Uint8Array {
  return toBinary(
    ImportStatusReplicaSchema,
    create(ImportStatusReplicaSchema, { revision: BigInt(revision) }),
  );
}

function serviceValue(version: string): Uint8Array {
  return toBinary(ServiceImportStatusSchema, create(ServiceImportStatusSchema, { version }));
}

function describeEntry(entry: StatusEntry): string {
  return entry.kind === "replica"
    ? `${entry.cluster}/${entry.replica} header ${entry.header.revision}`
    : `${entry.cluster}/${entry.replica} ${entry.service} ${entry.status.version}`;
}

function describeEvent(event: StatusEvent): string {
  if (event.type === "put") return `put ${describeEntry(event.entry)}`;
  const { key } = event;
  return `delete ${key.cluster}/${key.replica} ${key.kind === "service" ? key.service : "header"}`;
}

function describeStatusStoreContract(target: StatusTarget): void {
  describe(`StatusStore contract: ${target.name}`, () => {
    let world: StatusWorld;
    let prefix: string;
    const open: { close(): Promise<void> }[] = [];

    beforeAll(() => target.setup());
    afterAll(() => target.teardown());
    afterEach(async () => {
      await Promise.all(open.splice(0).map((store) => store.close()));
    });

    const fresh = (): void => {
      prefix = `/status-${randomUUID().slice(0, 8)}/aether/v1`;
      const created = target.createWorld(prefix);
      world = {
        ...created,
        status: (cluster) => {
          const store = created.status(cluster);
          open.push(store);
          return store;
        },
        config: (origin) => {
          const store = created.config(origin);
          open.push(store);
          return store;
        },
      };
    };

    it("writes its own cluster's status in one batch and lists every cluster's, skipping other keys", async () => {
      fresh();
      const east = world.status("east");
      const west = world.status("west");
      expect(east.kind).toBe(target.name);
      const r1 = await east.write([
        { type: "put", key: replicaHeaderKey(prefix, "east", "r1"), value: header(7) },
        {
          type: "put",
          key: serviceStatusKey(prefix, "east", "r1", "shop/web"),
          value: serviceValue("v1"),
        },
        {
          type: "put",
          key: serviceStatusKey(prefix, "east", "r1", "@mesh"),
          value: serviceValue("m1"),
        },
      ]);
      await west.write([
        { type: "put", key: replicaHeaderKey(prefix, "west", "r9"), value: header(3) },
      ]);
      // A projection and an election-like key under clusters/ are not status: skipped, not counted.
      await world.config("east").put(makeProjection("shop/web", { version: versionAt(1) }));
      await world.putRaw(`${prefix}/clusters/east/election/export`, new Uint8Array([1]));
      await world.putRaw(`${prefix}/clusters/east/status/Bad_Name/replica`, header(1));

      const all = await west.list();
      expect(all.revision).toBeGreaterThan(r1);
      expect(all.entries.map(describeEntry).sort()).toEqual([
        "east/r1 @mesh m1",
        "east/r1 header 7",
        "east/r1 shop/web v1",
        "west/r9 header 3",
      ]);
      const eastOnly = await west.list("east");
      expect(eastOnly.entries.map(describeEntry).sort()).toEqual([
        "east/r1 @mesh m1",
        "east/r1 header 7",
        "east/r1 shop/web v1",
      ]);
      expect(eastOnly.entries.find((e) => e.kind === "replica")?.modRevision).toBe(r1);
      expect(west.counters.invalidValues).toBe(0);
    });

    it("skips and counts a value that does not decode, under another cluster's status key", async () => {
      fresh();
      const east = world.status("east");
      const watched: StatusEvent[] = [];
      const start = (await east.list()).revision;
      const watch = east.watch(start, { onEvents: (e) => watched.push(...e), onError: () => {} });
      await world.putRaw(replicaHeaderKey(prefix, "forged", "r1"), GARBAGE);
      await world.putRaw(serviceStatusKey(prefix, "forged", "r1", "shop/web"), serviceValue("ok"));
      const listed = await east.list();
      expect(listed.entries.map(describeEntry)).toEqual(["forged/r1 shop/web ok"]);
      expect(east.counters.invalidValues).toBe(1);
      await waitFor(() => watched.length > 0, 10_000, "the decodable value's event");
      expect(watched.map(describeEvent)).toEqual(["put forged/r1 shop/web ok"]);
      // The watch skipped the same bad value: counted once.
      expect(east.counters.invalidValues).toBe(1);
      await world.putRaw(replicaHeaderKey(prefix, "forged", "r1"), GARBAGE);
      await waitFor(
        () => east.counters.invalidValues === 2,
        10_000,
        "the second bad value counted",
      );
      await watch.cancel();
    });

    it("refuses keys outside its own cluster's status, duplicates and oversized batches, writing nothing", async () => {
      fresh();
      const east = world.status("east");
      const before = (await east.list()).revision;
      const bad = [
        replicaHeaderKey(prefix, "west", "r1"),
        `${prefix}/clusters/east/config/c2hvcC93ZWI`,
        `${prefix}/clusters/east/status/r1/other`,
        `/elsewhere/aether/v1/clusters/east/status/r1/replica`,
      ];
      for (const key of bad) {
        await expect(east.write([{ type: "put", key, value: header(1) }]), key).rejects.toThrow(
          TypeError,
        );
        await expect(east.write([{ type: "delete", key }]), key).rejects.toThrow(TypeError);
      }
      const key = replicaHeaderKey(prefix, "east", "r1");
      await expect(
        east.write([
          { type: "put", key, value: header(1) },
          { type: "delete", key },
        ]),
      ).rejects.toThrow(TypeError);
      const many = Array.from({ length: MAX_WRITE_BATCH + 1 }, (_, i) => ({
        type: "put" as const,
        key: serviceStatusKey(prefix, "east", "r1", `shop/s${i}`),
        value: serviceValue("v"),
      }));
      await expect(east.write(many)).rejects.toThrow(RangeError);
      await expect(east.write(many.slice(0, MAX_WRITE_BATCH))).resolves.toBeGreaterThan(before);
      expect((await east.list()).entries).toHaveLength(MAX_WRITE_BATCH);
      // Another replica of its own cluster may be deleted (garbage collection).
      await east.write([
        { type: "delete", key: serviceStatusKey(prefix, "east", "r1", "shop/s0") },
      ]);
      expect((await east.list()).entries).toHaveLength(MAX_WRITE_BATCH - 1);
    });

    it("watches puts and deletes of every cluster after a revision, in order, one batch at one revision", async () => {
      fresh();
      const east = world.status("east");
      const west = world.status("west");
      const start = await east.write([
        { type: "put", key: replicaHeaderKey(prefix, "east", "r1"), value: header(1) },
      ]);
      const events: StatusEvent[] = [];
      const watch = west.watch(start, {
        onEvents: (batch) => events.push(...batch),
        onError: () => {},
      });
      const r2 = await east.write([
        { type: "put", key: replicaHeaderKey(prefix, "east", "r1"), value: header(2) },
        {
          type: "put",
          key: serviceStatusKey(prefix, "east", "r1", "shop/web"),
          value: serviceValue("v2"),
        },
      ]);
      await world.config("east").put(makeProjection("shop/web", { version: versionAt(2) }));
      await west.write([
        { type: "put", key: replicaHeaderKey(prefix, "west", "w1"), value: header(5) },
      ]);
      await east.write([
        { type: "delete", key: serviceStatusKey(prefix, "east", "r1", "shop/web") },
      ]);
      await waitFor(() => events.length >= 4, 10_000, "four status events");
      expect(events.map(describeEvent)).toEqual([
        "put east/r1 header 2",
        "put east/r1 shop/web v2",
        "put west/w1 header 5",
        "delete east/r1 shop/web",
      ]);
      expect(events.slice(0, 2).map((e) => e.revision)).toEqual([r2, r2]);
      await watch.cancel();
    });

    it("ends a watch from a compacted revision with StoreCompactedError", async () => {
      fresh();
      const east = world.status("east");
      const key = replicaHeaderKey(prefix, "east", "r1");
      const r1 = await east.write([{ type: "put", key, value: header(1) }]);
      await east.write([{ type: "put", key, value: header(2) }]);
      const r3 = await east.write([{ type: "put", key, value: header(3) }]);
      await world.compact(r3);
      const errors: Error[] = [];
      const watch = east.watch(r1, { onEvents: () => {}, onError: (error) => errors.push(error) });
      await waitFor(() => errors.length > 0, 10_000, "the compaction error");
      expect(errors[0]).toBeInstanceOf(StoreCompactedError);
      await watch.cancel();
    });

    it("leaves the config store's counters alone: status keys are not invalid projection keys", async () => {
      fresh();
      const east = world.status("east");
      const config = world.config("east");
      const start = await config.revision();
      const seen: unknown[] = [];
      const watch = config.watch(start, { onEvents: (e) => seen.push(...e), onError: () => {} });
      await east.write([
        { type: "put", key: replicaHeaderKey(prefix, "east", "r1"), value: header(1) },
        {
          type: "put",
          key: serviceStatusKey(prefix, "east", "r1", "shop/web"),
          value: serviceValue("v"),
        },
      ]);
      await config.put(makeProjection("shop/web", { version: versionAt(1) }));
      await waitFor(() => seen.length > 0, 10_000, "the projection's event");
      expect(seen).toHaveLength(1);
      expect((await config.list()).entries).toHaveLength(1);
      expect(config.counters.invalidKeys).toBe(0);
      expect(config.counters.decodeErrors).toBe(0);
      await watch.cancel();
    });
  });
}

describeStatusStoreContract({
  name: "memory",
  setup: async () => {},
  teardown: async () => {},
  createWorld(prefix) {
    const backend = createMemoryBackend();
    return {
      status: (cluster) => createMemoryStatusStore({ backend, cluster, prefix }),
      config: (origin) => createMemoryStore({ origin, prefix, backend }),
      putRaw: async (key, value) => backend.put(key, value),
      compact: async (revision) => backend.compact(revision),
    };
  },
});

let etcd: EtcdHandle | undefined;
let raw: Etcd3 | undefined;
describeStatusStoreContract({
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
    const endpoints = [etcd?.endpoint ?? ""];
    const client = raw as Etcd3;
    return {
      status: (cluster) => createEtcdStatusStore({ cluster, endpoints, prefix }),
      config: (origin) => createEtcdStore({ origin, endpoints, prefix }),
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
