/**
 * The entry decoder's memory of values it decoded: the same bytes under the
 * same key are not decoded again (their message is decoded when first read),
 * while anything else (other bytes, a value that needed re-stamping, a key
 * deleted since) is decoded and checked as always.
 */
import { toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import type { StoredProjection } from "../../services/registrar/store/config-store.js";
import { createEntryDecoder } from "../../services/registrar/store/decode-entry.js";
import { createMemoryStore } from "../../services/registrar/store/memory-store.js";
import { DEFAULT_STORE_PREFIX, projectionKey } from "../../services/registrar/store/store-key.js";
import { captureLogger } from "../support/capture-logger.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

const key = projectionKey(DEFAULT_STORE_PREFIX, "hub", "shop/web");
const bytes = (version = versionAt(1), origin = "hub") =>
  toBinary(ServiceConfigProjectionSchema, makeProjection("shop/web", { version, origin }));

/** Whether the entry's message is still to be decoded (an accessor, not a value). */
const isLazy = (entry: StoredProjection | undefined) =>
  Object.getOwnPropertyDescriptor(entry, "projection")?.get !== undefined;

describe("entry decoder", () => {
  it("decodes a value once; the same bytes again give an entry whose message is decoded on first read", () => {
    const decoder = createEntryDecoder({
      prefix: DEFAULT_STORE_PREFIX,
      logger: captureLogger().logger,
    });
    const first = decoder.decodeEntry({ key, value: bytes(), modRevision: 5 });
    expect(isLazy(first)).toBe(false);
    expect(first?.version).toBe(versionAt(1));
    const again = decoder.decodeEntry({ key, value: bytes(), modRevision: 5 });
    expect(isLazy(again)).toBe(true);
    expect(again).toMatchObject({
      origin: "hub",
      service: "shop/web",
      version: versionAt(1),
      modRevision: 5,
    });
    expect(again?.value).toBe(first?.value);
    expect(again?.projection).toEqual(first?.projection);
    expect(again?.projection).toBe(again?.projection); // decoded once, then kept on the entry
    // Other bytes under the key are decoded (and remembered) again.
    const changed = decoder.decodeEntry({ key, value: bytes(versionAt(2)), modRevision: 6 });
    expect(isLazy(changed)).toBe(false);
    expect(changed?.version).toBe(versionAt(2));
  });

  it("still skips and counts a corrupt value under a key whose earlier value it remembers", () => {
    const log = captureLogger();
    const decoder = createEntryDecoder({ prefix: DEFAULT_STORE_PREFIX, logger: log.logger });
    decoder.decodeEntry({ key, value: bytes(), modRevision: 5 });
    const corrupt = new Uint8Array([0xff, 0xff, 0xff, 0xff]);
    expect(decoder.decodeEntry({ key, value: corrupt, modRevision: 6 })).toBeUndefined();
    expect(decoder.counters.decodeErrors).toBe(1);
  });

  it("never takes a re-stamped value from memory, and forgets a key once it is deleted", () => {
    const log = captureLogger();
    const decoder = createEntryDecoder({ prefix: DEFAULT_STORE_PREFIX, logger: log.logger });
    const claiming = bytes(versionAt(1), "evil");
    for (const modRevision of [5, 5]) {
      const entry = decoder.decodeEntry({ key, value: claiming, modRevision });
      expect(isLazy(entry)).toBe(false);
      expect(entry?.projection.originCluster).toBe("hub");
      expect(entry?.value).toEqual(bytes(versionAt(1), "hub"));
    }
    expect(decoder.counters.restamped).toBe(1);

    const events = decoder.decodeChanges([
      { type: "put", key, value: bytes(), revision: 7 },
      { type: "delete", key, revision: 8 },
    ]);
    expect(events.map((e) => e.type)).toEqual(["put", "delete"]);
    expect(isLazy(decoder.decodeEntry({ key, value: bytes(), modRevision: 7 }))).toBe(false);
  });

  it("does not decode what its store wrote itself when it comes back through a watch", async () => {
    const store = createMemoryStore({ origin: "hub" });
    const events: StoredProjection[] = [];
    const watch = store.watch(await store.revision(), {
      onEvents: (batch) => {
        for (const event of batch) if (event.type === "put") events.push(event.entry);
      },
      onError: () => {},
    });
    await store.write([
      { type: "put", projection: makeProjection("shop/web", { version: versionAt(4) }) },
    ]);
    await waitFor(() => events.length === 1);
    expect(isLazy(events[0])).toBe(true);
    expect(events[0]?.version).toBe(versionAt(4));
    expect(events[0]?.projection.originCluster).toBe("hub");
    // A value another writer put under the key is decoded.
    store.putRaw(key, bytes(versionAt(5)));
    await waitFor(() => events.length === 2);
    expect(isLazy(events[1])).toBe(false);
    await watch.cancel();
  });

  it("remembers at most verifiedMemory values, forgetting the oldest first", () => {
    const decoder = createEntryDecoder({
      prefix: DEFAULT_STORE_PREFIX,
      logger: captureLogger().logger,
      verifiedMemory: 2,
    });
    const keyOf = (service: string) => projectionKey(DEFAULT_STORE_PREFIX, "hub", service);
    const encodedOf = (service: string) =>
      toBinary(ServiceConfigProjectionSchema, makeProjection(service, { origin: "hub" }));
    for (const service of ["shop/a", "shop/b", "shop/c"]) {
      decoder.decodeEntry({ key: keyOf(service), value: encodedOf(service), modRevision: 1 });
    }
    const lazy = (service: string) =>
      isLazy(
        decoder.decodeEntry({ key: keyOf(service), value: encodedOf(service), modRevision: 1 }),
      );
    expect([lazy("shop/b"), lazy("shop/c"), lazy("shop/a")]).toEqual([true, true, false]);
  });
});
