/** The last-known cache file: round trip (high-water marks too, and a file without them), and every way a file can be unusable. */
import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  CACHE_FILE_NAME,
  type CachedState,
  CacheFileError,
  createLastKnownCache,
  decodeCacheFile,
  encodeCacheFile,
} from "../../clients/agent/last-known-cache.js";
import { makeProjection, versionAt } from "../support/projections.js";

const state: CachedState = {
  revision: 42n,
  services: ["shop/a", "shop/b"],
  imported: [
    {
      origin: "hub",
      service: "shop/a",
      projection: makeProjection("shop/a", { origin: "hub", version: versionAt(3) }),
    },
  ],
  local: [makeProjection("shop/b", { version: "", backend: "shop/b-local" })],
  marks: [
    { origin: "east", service: "shop/a", version: versionAt(7) },
    { origin: "hub", service: "shop/a", version: versionAt(3) },
  ],
  savedAt: new Date("2026-11-30T00:00:00.000Z"),
};

function reasonOf(bytes: Uint8Array): string {
  try {
    decodeCacheFile(bytes);
    return "ok";
  } catch (error) {
    return error instanceof CacheFileError ? error.reason : `unexpected: ${String(error)}`;
  }
}

/** A cache file of `json` as its payload, with a valid header. */
function fileOf(json: string): Buffer {
  const body = Buffer.from(json);
  const sum = createHash("sha256").update(body).digest("hex");
  return Buffer.concat([
    Buffer.from(`aether-agent-cache 1 sha256=${sum} bytes=${body.length}\n`),
    body,
  ]);
}

const encoded = encodeCacheFile(state);
const newline = encoded.indexOf(0x0a);
const header = encoded.subarray(0, newline).toString();
const payload = encoded.subarray(newline + 1);

describe("cache file format", () => {
  it("round-trips a state", () => {
    const decoded = decodeCacheFile(encoded);
    expect(decoded.revision).toBe(42n);
    expect(decoded.services).toEqual(["shop/a", "shop/b"]);
    expect(decoded.imported).toEqual(state.imported);
    expect(decoded.local).toEqual(state.local);
    expect(decoded.marks).toEqual(state.marks);
    expect(decoded.savedAt?.toISOString()).toBe("2026-11-30T00:00:00.000Z");
    expect(header).toMatch(/^aether-agent-cache 1 sha256=[0-9a-f]{64} bytes=\d+$/);
  });

  const flipped = Buffer.from(encoded);
  flipped.writeUInt8(flipped.readUInt8(flipped.length - 10) ^ 0x01, flipped.length - 10);
  const cases: [string, Uint8Array, string][] = [
    ["a flipped payload bit", flipped, "checksum_mismatch"],
    ["a truncated payload", encoded.subarray(0, encoded.length - 7), "truncated"],
    ["a truncated header", encoded.subarray(0, 12), "truncated"],
    ["an empty file", Buffer.alloc(0), "truncated"],
    [
      "another format version",
      Buffer.concat([Buffer.from(`${header.replace(" 1 ", " 2 ")}\n`), payload]),
      "unsupported_version",
    ],
    ["trailing bytes", Buffer.concat([encoded, Buffer.from("x")]), "malformed"],
    ["not a cache file", Buffer.from('{"services":[]}\n'), "malformed"],
    ["binary garbage", Buffer.from([0xff, 0x00, 0x13, 0x0a, 0x37]), "malformed"],
  ];
  for (const [name, bytes, reason] of cases) {
    it(`reports ${name} as ${reason}`, () => expect(reasonOf(bytes)).toBe(reason));
  }

  it("loads a file written before marks existed (no marks field): no marks", () => {
    const old = fileOf('{"revision":"7","services":["shop/a"],"imported":[],"local":[]}');
    const decoded = decodeCacheFile(old);
    expect(decoded.revision).toBe(7n);
    expect(decoded.marks).toEqual([]);
  });

  it("reports a payload with a valid checksum but a bad shape as malformed", () => {
    const bad = fileOf;
    const empty = '"revision":"1","services":[],"imported":[],"local":[]';
    expect(reasonOf(bad(`{${empty},"marks":{}}`))).toBe("malformed");
    expect(reasonOf(bad(`{${empty},"marks":[{"origin":"hub","service":"a/b"}]}`))).toBe(
      "malformed",
    );
    expect(reasonOf(bad("[]"))).toBe("malformed");
    expect(reasonOf(bad('{"revision":"x","services":[],"imported":[],"local":[]}'))).toBe(
      "malformed",
    );
    expect(
      reasonOf(
        bad(
          '{"revision":"1","services":[],"imported":[{"origin":"hub","service":"a/b","projection":{"routes":7}}],"local":[]}',
        ),
      ),
    ).toBe("malformed");
  });
});

describe("cache directory", () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("saves atomically (no temporary file left), loads what it saved, and reports a corrupt file without throwing", async () => {
    dir = await mkdtemp(join(tmpdir(), "agent-cache-"));
    const errors: string[] = [];
    const cache = createLastKnownCache({
      dir: join(dir, "nested"),
      onError: (e) => errors.push(e.reason),
    });
    expect(await cache.load()).toBeUndefined(); // no file yet: not an error
    cache.save({ ...state, revision: 1n });
    cache.save(state); // a burst: the latest wins
    await cache.flush();
    expect(await readdir(join(dir, "nested"))).toEqual([CACHE_FILE_NAME]);
    expect((await cache.load())?.revision).toBe(42n);
    const path = join(dir, "nested", CACHE_FILE_NAME);
    await writeFile(path, (await readFile(path)).subarray(0, 50));
    expect(await cache.load()).toBeUndefined();
    expect(errors).toEqual(["truncated"]);
  });

  it("reports a save it cannot make", async () => {
    dir = await mkdtemp(join(tmpdir(), "agent-cache-"));
    await writeFile(join(dir, "file"), "not a directory");
    const errors: string[] = [];
    const cache = createLastKnownCache({
      dir: join(dir, "file", "sub"),
      onError: (e) => errors.push(e.reason),
    });
    cache.save(state);
    await cache.flush();
    expect(errors).toEqual(["write_failed"]);
  });
});
