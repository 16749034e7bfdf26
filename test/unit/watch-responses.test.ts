/**
 * The messages of a WatchConfig stream from what the cache reports: the
 * initial sync (snapshot or replay), SYNCED, the changes and keep-alives,
 * alike on a binary stream (stored bytes, never decoded) and a JSON one.
 */
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  type WatchConfigResponse,
  WatchConfigResponseSchema,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import type {
  CachedProjection,
  CacheEvent,
  InitialSync,
} from "../../services/registrar/cache/config-cache.js";
import {
  eventResponse,
  initialResponses,
  keepaliveResponse,
} from "../../services/registrar/service/watch-responses.js";
import { makeProjection, versionAt } from "../support/projections.js";

/** A cache entry of `origin`'s projection of `service`. */
function cached(origin: string, service: string, modRevision = 3): CachedProjection {
  const version = versionAt(modRevision);
  return {
    origin,
    service,
    projection: { service, version },
    value: toBinary(ServiceConfigProjectionSchema, makeProjection(service, { origin, version })),
    modRevision,
  };
}

/** A cache entry whose bytes are not a projection: decoding them throws. */
function corrupt(origin: string, service: string): CachedProjection {
  return { ...cached(origin, service), value: new Uint8Array([0xff, 0xff]) };
}

const upsert = (entry: CachedProjection, revision: number): CacheEvent => ({
  type: "upsert",
  origin: entry.origin,
  service: entry.service,
  entry,
  revision,
});
const remove = (origin: string, service: string, revision: number): CacheEvent => ({
  type: "delete",
  origin,
  service,
  revision,
});

/** A response as a client decodes it. */
function decoded(response: WatchConfigResponse): WatchConfigResponse {
  return fromBinary(WatchConfigResponseSchema, toBinary(WatchConfigResponseSchema, response));
}

/** The bytes a binary response carries as its projection (after their length), if any. */
function storedBytes(response: WatchConfigResponse): Uint8Array | undefined {
  expect(response.projection).toBeUndefined();
  const [field, ...others] = response.$unknown ?? [];
  expect(others).toEqual([]);
  if (field === undefined) return undefined;
  expect(field.no).toBe(WatchConfigResponseSchema.field.projection.number);
  let at = 0; // past the length varint
  while (((field.data[at] as number) & 0x80) !== 0) at++;
  return field.data.subarray(at + 1);
}

/** The encoding of a JSON response's decoded projection, if any. */
function projectionBytes(response: WatchConfigResponse): Uint8Array | undefined {
  return response.projection === undefined
    ? undefined
    : toBinary(ServiceConfigProjectionSchema, response.projection);
}

/** What a client reads of a response: its type, service, origin, revision, `resumed` and projection. */
function seen(response: WatchConfigResponse): string {
  const read = fromBinary(WatchConfigResponseSchema, toBinary(WatchConfigResponseSchema, response));
  const projection =
    read.projection === undefined
      ? "-"
      : `${read.projection.service}@${read.projection.originCluster}@${read.projection.version}`;
  return [
    WatchEventType[read.type],
    read.service,
    read.originCluster,
    read.revision,
    read.resumed,
    projection,
  ].join(" ");
}

const A = cached("hub", "shop/a", 3);
const B = cached("east", "shop/b", 4);

describe("initialResponses", () => {
  const cases: [string, InitialSync, string[]][] = [
    ["an empty snapshot", { kind: "snapshot", entries: [], revision: 4 }, ["SYNCED   4 false -"]],
    [
      "a snapshot",
      { kind: "snapshot", entries: [A, B], revision: 9 },
      [
        `SNAPSHOT shop/a hub 9 false shop/a@hub@${versionAt(3)}`,
        `SNAPSHOT shop/b east 9 false shop/b@east@${versionAt(4)}`,
        "SYNCED   9 false -",
      ],
    ],
    ["an empty replay", { kind: "replay", events: [], revision: 7 }, ["SYNCED   7 true -"]],
    [
      "a replay",
      { kind: "replay", events: [upsert(B, 5), remove("hub", "shop/a", 6)], revision: 6 },
      [
        `UPSERT shop/b east 5 false shop/b@east@${versionAt(4)}`,
        "DELETE shop/a hub 6 false -",
        "SYNCED   6 true -",
      ],
    ],
  ];
  for (const [name, initial, expected] of cases) {
    it(`starts a stream with ${name}, then SYNCED, alike in binary and JSON`, () => {
      const json = [...initialResponses(initial, false)];
      const binary = [...initialResponses(initial, true)];
      expect(json.map(seen)).toEqual(expected);
      expect(binary.map(seen)).toEqual(expected);
      // The same messages to a client, the binary stream sending the stored encoding as it is.
      expect(binary.map(decoded)).toEqual(json.map(decoded));
      expect(binary.map(storedBytes)).toEqual(json.map(projectionBytes));
    });
  }

  it("never decodes a projection on a binary stream", () => {
    const bad = corrupt("hub", "shop/bad");
    const initial: InitialSync = { kind: "snapshot", entries: [bad], revision: 2 };
    const [snapshot] = [...initialResponses(initial, true)];
    expect(snapshot?.projection).toBeUndefined();
    expect(snapshot?.$unknown?.map((field) => field.no)).toEqual([
      WatchConfigResponseSchema.field.projection.number,
    ]);
    expect(() => [...initialResponses(initial, false)]).toThrow();
  });

  it("decodes a projection on a JSON stream only when its response is taken", () => {
    const initial: InitialSync = {
      kind: "snapshot",
      entries: [A, corrupt("hub", "shop/bad")],
      revision: 2,
    };
    const responses = initialResponses(initial, false);
    expect(seen(responses.next().value as WatchConfigResponse)).toMatch(/^SNAPSHOT shop\/a/);
    expect(() => responses.next()).toThrow();
  });
});

describe("eventResponse and keepaliveResponse", () => {
  const cases: [string, WatchConfigResponse, WatchConfigResponse, string][] = [
    [
      "an upsert",
      eventResponse(upsert(A, 12), false),
      eventResponse(upsert(A, 12), true),
      `UPSERT shop/a hub 12 false shop/a@hub@${versionAt(3)}`,
    ],
    [
      "a delete",
      eventResponse(remove("east", "shop/b", 13), false),
      eventResponse(remove("east", "shop/b", 13), true),
      "DELETE shop/b east 13 false -",
    ],
    ["a keep-alive", keepaliveResponse(14), keepaliveResponse(14), "KEEPALIVE   14 false -"],
  ];
  for (const [name, json, binary, expected] of cases) {
    it(`maps ${name}, alike in binary and JSON`, () => {
      expect(seen(json)).toBe(expected);
      expect(seen(binary)).toBe(expected);
      expect(decoded(binary)).toEqual(decoded(json));
      expect(storedBytes(binary)).toEqual(projectionBytes(json));
    });
  }
});
