/**
 * The registrar's bounded gzip: places handed on in arrival order, never more
 * running than places, and gzip that round-trips and keeps connect-node's
 * decompression limit.
 */
import { gunzipSync, gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { boundedGzip, createPlaces } from "../../services/registrar/server/bounded-compression.js";

/** A task that finishes when `finish` is called, recording when it started. */
function gated(started: string[], name: string) {
  let finish: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  return {
    task: async () => {
      started.push(name);
      await done;
      return name;
    },
    finish: () => finish(),
  };
}

describe("places", () => {
  it("runs at most its places at once and hands each freed place to the oldest waiter", async () => {
    const places = createPlaces(2);
    const started: string[] = [];
    const tasks = ["a", "b", "c", "d"].map((name) => gated(started, name));
    const results = tasks.map((t) => places.run(t.task));
    await Promise.resolve();
    expect(started).toEqual(["a", "b"]);
    expect([places.running, places.waiting]).toEqual([2, 2]);
    tasks[1]?.finish();
    await expect(results[1]).resolves.toBe("b");
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(["a", "b", "c"]);
    expect([places.running, places.waiting]).toEqual([2, 1]);
    for (const t of tasks) t.finish();
    await expect(Promise.all(results)).resolves.toEqual(["a", "b", "c", "d"]);
    expect([places.running, places.waiting]).toEqual([0, 0]);
  });

  it("frees the place of a task that fails", async () => {
    const places = createPlaces(1);
    await expect(places.run(() => Promise.reject(new Error("codec failed")))).rejects.toThrow(
      "codec failed",
    );
    await expect(places.run(async () => "next")).resolves.toBe("next");
    expect([places.running, places.waiting]).toEqual([0, 0]);
  });

  it("has at least one place", async () => {
    const places = createPlaces(0);
    await expect(places.run(async () => 1)).resolves.toBe(1);
  });
});

describe("bounded gzip", () => {
  const text = new TextEncoder().encode("shop/checkout ".repeat(2_000));

  it("is gzip: what it compresses gunzips to the input, and it decompresses gzip", async () => {
    const gzip = boundedGzip(createPlaces(1));
    expect(gzip.name).toBe("gzip");
    const compressed = await gzip.compress(text);
    expect(compressed.byteLength).toBeLessThan(text.byteLength / 10);
    expect(new Uint8Array(gunzipSync(compressed))).toEqual(text);
    expect(
      new Uint8Array(await gzip.decompress(new Uint8Array(gzipSync(text)), 1_000_000)),
    ).toEqual(text);
  });

  it("refuses to decompress beyond the read limit (a compression bomb)", async () => {
    const gzip = boundedGzip(createPlaces(1));
    await expect(gzip.decompress(new Uint8Array(gzipSync(text)), 1_000)).rejects.toThrow(
      /resource_exhausted.*larger/,
    );
  });

  it("compresses no more messages at once than it has places", async () => {
    const places = createPlaces(2);
    const gzip = boundedGzip(places);
    let most = 0;
    const watching = setInterval(() => {
      most = Math.max(most, places.running);
    }, 0);
    const outputs = await Promise.all(Array.from({ length: 20 }, () => gzip.compress(text)));
    clearInterval(watching);
    expect(outputs.every((o) => new Uint8Array(gunzipSync(o)).length === text.length)).toBe(true);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2);
  });
});
