/**
 * The status feed over a memory status store: it lists, then follows puts
 * and deletes of every cluster, stamps when it saw a header change on its
 * own clock, forgets a replica whose keys are all gone, and lists again
 * after its watch ends (a compaction).
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it } from "vitest";
import {
  ImportStatusReplicaSchema,
  ServiceImportStatusSchema,
} from "../../gen/aether/registry/v1/fleet_pb.js";
import { replicaHeaderKey, serviceStatusKey } from "../../services/common/status-layout.js";
import {
  createStatusFeed,
  type RunningStatusFeed,
} from "../../services/registrar/fleet/status-feed.js";
import { StoreCompactedError } from "../../services/registrar/store/config-store.js";
import { createMemoryBackend } from "../../services/registrar/store/memory-backend.js";
import type { StatusStore } from "../../services/registrar/store/status-store.js";
import { createMemoryStatusStore } from "../../services/registrar/store/status-store-memory.js";
import { waitFor } from "../support/wait.js";

const PREFIX = "/aether/v1";
const feeds: RunningStatusFeed[] = [];
afterEach(async () => {
  await Promise.all(feeds.splice(0).map((f) => f.stop()));
});

const header = (revision: number) =>
  toBinary(
    ImportStatusReplicaSchema,
    create(ImportStatusReplicaSchema, { revision: BigInt(revision) }),
  );
const value = (version: string) =>
  toBinary(ServiceImportStatusSchema, create(ServiceImportStatusSchema, { version }));

function describeFeed(feed: RunningStatusFeed): string[] {
  return [...feed.replicas()]
    .map(
      (r) =>
        `${r.cluster}/${r.replica} h${r.header?.revision ?? "-"} ${[...r.services]
          .map(([s, v]) => `${s}=${v.version}`)
          .sort()
          .join(",")} @${r.seenAtMs}`,
    )
    .sort();
}

describe("status feed", () => {
  it("lists, follows changes of every cluster and forgets a replica whose keys are gone", async () => {
    const backend = createMemoryBackend();
    const east = createMemoryStatusStore({ backend, cluster: "east", prefix: PREFIX });
    const west = createMemoryStatusStore({ backend, cluster: "west", prefix: PREFIX });
    await east.write([
      { type: "put", key: replicaHeaderKey(PREFIX, "east", "r1"), value: header(1) },
      { type: "put", key: serviceStatusKey(PREFIX, "east", "r1", "shop/web"), value: value("v1") },
    ]);
    let clock = 1_000;
    const feed = createStatusFeed({ store: west, now: () => clock });
    feeds.push(feed);
    let changes = 0;
    feed.onChange(() => changes++);
    expect(feed.synced).toBe(false);
    feed.start();
    await waitFor(() => feed.synced, 5_000, "the first listing");
    expect(describeFeed(feed)).toEqual(["east/r1 h1 shop/web=v1 @1000"]);

    clock = 2_000;
    await west.write([
      { type: "put", key: replicaHeaderKey(PREFIX, "west", "w1"), value: header(4) },
    ]);
    await east.write([
      { type: "put", key: serviceStatusKey(PREFIX, "east", "r1", "shop/web"), value: value("v2") },
    ]);
    await waitFor(
      () => describeFeed(feed).length === 2 && describeFeed(feed)[0]?.includes("v2") === true,
    );
    // A service value does not change when the header was seen; a header does.
    expect(describeFeed(feed)).toEqual(["east/r1 h1 shop/web=v2 @1000", "west/w1 h4  @2000"]);

    await east.write([
      { type: "delete", key: replicaHeaderKey(PREFIX, "east", "r1") },
      { type: "delete", key: serviceStatusKey(PREFIX, "east", "r1", "shop/web") },
    ]);
    await waitFor(() => describeFeed(feed).length === 1, 5_000, "east/r1 forgotten");
    expect(describeFeed(feed)).toEqual(["west/w1 h4  @2000"]);
    expect(changes).toBeGreaterThanOrEqual(3);
  });

  it("lists again after its watch ends, keeping when it saw unchanged headers", async () => {
    const backend = createMemoryBackend();
    const inner = createMemoryStatusStore({ backend, cluster: "east", prefix: PREFIX });
    await inner.write([
      { type: "put", key: replicaHeaderKey(PREFIX, "east", "r1"), value: header(1) },
    ]);
    let clock = 5;
    let endWatch: (() => Promise<void>) | undefined;
    let lists = 0;
    const store: StatusStore = {
      ...inner,
      list: (cluster) => {
        lists++;
        return inner.list(cluster);
      },
      watch: (after, handler) => {
        const watch = inner.watch(after, handler);
        let ended = false;
        endWatch = async () => {
          await watch.cancel();
          // Written while no watch follows: only a new listing can see it.
          clock = 9;
          await inner.write([
            { type: "put", key: replicaHeaderKey(PREFIX, "east", "r2"), value: header(2) },
          ]);
          ended = true;
          handler.onError(new StoreCompactedError("compacted", after + 1));
        };
        return { cancel: async () => (ended ? undefined : watch.cancel()) };
      },
    };
    const feed = createStatusFeed({ store, now: () => clock, retryMs: 1 });
    feeds.push(feed);
    feed.start();
    await waitFor(() => feed.synced && endWatch !== undefined, 5_000, "the first watch");
    await endWatch?.();
    await waitFor(() => describeFeed(feed).length === 2, 5_000, "the re-listing");
    expect(lists).toBe(2);
    expect(describeFeed(feed)).toEqual(["east/r1 h1  @5", "east/r2 h2  @9"]);
  });
});
