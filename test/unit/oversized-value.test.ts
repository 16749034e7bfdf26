/**
 * Values over the projection byte limit on the registrar's import side: the
 * store's decoder passes them on undecoded (their version read off their
 * field headers), the import policy rejects them as `too_large` from their
 * length before anything else, and the projection index holds, counts and
 * reports them but serves them in neither view.
 */
import { toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import { createImportPolicy } from "../../services/common/import-policy.js";
import { projectionLimits } from "../../services/common/projection-limits.js";
import { createProjectionIndex } from "../../services/registrar/cache/projection-index.js";
import { createEntryDecoder } from "../../services/registrar/store/decode-entry.js";
import { peekVersion } from "../../services/registrar/store/oversized-value.js";
import { DEFAULT_STORE_PREFIX, projectionKey } from "../../services/registrar/store/store-key.js";
import { cachedEntry, eventText, putOf } from "../support/cache-entries.js";
import { captureLogger } from "../support/capture-logger.js";
import { makeProjection, versionAt } from "../support/projections.js";

const encoded = (service: string, version: string, origin = "hub") =>
  toBinary(ServiceConfigProjectionSchema, makeProjection(service, { version, origin }));

describe("peekVersion", () => {
  it("reads the version off a projection's fields, and nothing off what is not one", () => {
    expect(peekVersion(encoded("shop/web", versionAt(7)))).toBe(versionAt(7));
    expect(peekVersion(encoded("shop/web", ""))).toBeUndefined();
    expect(peekVersion(Uint8Array.of(0xff, 0xff))).toBeUndefined();
    expect(peekVersion(new Uint8Array(0))).toBeUndefined();
    // A version longer than any real one is not read.
    expect(peekVersion(encoded("shop/web", "v".repeat(65)))).toBeUndefined();
  });
});

describe("entry decoder and oversized values", () => {
  it("never decodes a value over maxValueBytes, and decodes the rest", () => {
    const decoder = createEntryDecoder({
      prefix: DEFAULT_STORE_PREFIX,
      logger: captureLogger().logger,
      maxValueBytes: 100,
    });
    const key = projectionKey(DEFAULT_STORE_PREFIX, "east", "shop/web");
    // Bytes that would not decode: the decoder would skip them as a decode error.
    const garbage = new Uint8Array(101).fill(0xff);
    const entry = decoder.decodeEntry({ key, value: garbage, modRevision: 3 });
    expect(entry).toMatchObject({
      origin: "east",
      service: "shop/web",
      version: "",
      modRevision: 3,
    });
    expect(entry?.value).toBe(garbage);
    expect(entry?.projection).toMatchObject({
      service: "shop/web",
      originCluster: "east",
      routes: [],
    });
    expect(decoder.counters.decodeErrors).toBe(0);

    const big = encoded("shop/web", versionAt(4), "east");
    expect(big.length).toBeGreaterThan(100);
    expect(decoder.decodeEntry({ key, value: big, modRevision: 4 })?.version).toBe(versionAt(4));

    const small = createEntryDecoder({
      prefix: DEFAULT_STORE_PREFIX,
      logger: captureLogger().logger,
    });
    expect(small.decodeEntry({ key, value: big, modRevision: 4 })?.projection.routes).toHaveLength(
      1,
    );
  });
});

describe("projection index and too_large", () => {
  const limits = projectionLimits({ maxBytes: 200 });
  const policy = createImportPolicy({ limits });
  const big = new Uint8Array(201);

  it("rejects an oversized value first, holds it, and serves it in neither view", () => {
    const rejected: string[] = [];
    const index = createProjectionIndex({
      policy,
      onRejection: (r) => rejected.push(`${r.candidate.origin}/${r.candidate.service}:${r.reason}`),
    });
    const good = cachedEntry("hub", "shop/web", versionAt(1), 1, new Uint8Array(10));
    index.apply(putOf(good));
    // Also an invalid version: too_large is found before anything else.
    const oversized = cachedEntry("east", "shop/web", "not-a-version", 2, big);
    const record = index.apply(putOf(oversized));
    expect(eventText(record?.raw)).toBe("delete:east/shop/web@2");
    expect(record?.effective).toBeUndefined();
    expect(rejected).toEqual(["east/shop/web:too_large"]);
    expect(index.rejections().map((r) => r.message)).toEqual([
      "the projection of shop/web takes 201 bytes; at most 200 are allowed (from east; not decoded)",
    ]);
    expect(index.snapshot(undefined, "all")).toEqual([good]);
    expect(index.snapshot(new Set(["shop/web"]), "all")).toEqual([good]);
    expect(index.snapshot(undefined, "effective")).toEqual([good]);
    expect(index.entries()).toEqual([oversized, good]);
    expect(index.stats().rejected.get("too_large")).toBe(1);
    expect(eventText(index.upsertRecord(oversized, 2).raw)).toBe("delete:east/shop/web@2");

    // Replaced by a value within the limit: served again.
    const fixed = cachedEntry("east", "shop/web", versionAt(3), 3, new Uint8Array(10));
    expect(eventText(index.apply(putOf(fixed))?.raw)).toBe("upsert:east/shop/web@3");
    expect(index.snapshot(undefined, "all")).toEqual([fixed, good]);
    expect(index.stats().rejected.get("too_large")).toBeUndefined();
  });
});
