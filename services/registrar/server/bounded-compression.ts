/**
 * The registrar's message compression: gzip only, at most a few zlib jobs at
 * once. connect-es's server default accepts gzip and brotli and runs each
 * through Node's asynchronous zlib, which allocates the whole codec state
 * (~256 KiB for gzip; tens of MiB for brotli at its default quality 11) the
 * moment a job is queued, not when a thread pool thread runs it. A burst of
 * large answers (10,000 ListAllConfig calls) then held hundreds of codec
 * states outside the V8 heap, where the heap cap does not reach; and one
 * client asking for `br` made each answer cost seconds of CPU (1.9 s for a
 * 1 MB listing, 130 times gzip's 14 ms, and +321 MiB RSS for 16 at once).
 * So: no brotli, and a job waits here, holding only its input, until one of
 * `concurrency` places is free. And only messages of {@link COMPRESS_MIN_BYTES}
 * or more are compressed: a watch event (one projection, a few KiB) goes out
 * as it is, never waiting behind listings for a place, and one encoding of
 * it can serve every stream.
 */
import { promisify } from "node:util";
import zlib from "node:zlib";
import type { Compression } from "@connectrpc/connect/protocol";
import { compressionGzip } from "@connectrpc/connect-node";

const gzip = promisify(zlib.gzip);

/**
 * The smallest message compressed (connect-es's `compressMinBytes`, 1 KiB by
 * default): below 16 KiB, gzip saves a few KiB on a cluster's network and
 * costs a codec state and a thread pool round trip per message per stream.
 */
export const COMPRESS_MIN_BYTES = 16 * 1024;

/** How many compressions run at once by default: the machine's two cores, not the whole pool. */
export const DEFAULT_COMPRESSION_CONCURRENCY = 2;

/** A FIFO of `places` places: `run` waits for one, runs, and hands it on. */
export interface Places {
  /** Runs `task` once a place is free, in arrival order. */
  run<T>(task: () => Promise<T>): Promise<T>;
  /** Tasks running now. */
  readonly running: number;
  /** Tasks waiting for a place. */
  readonly waiting: number;
}

/** Creates {@link Places} with `places` places (at least 1). */
export function createPlaces(places: number): Places {
  const limit = Math.max(1, places);
  const queue: (() => void)[] = [];
  let running = 0;
  const release = () => {
    const next = queue.shift();
    // The place goes straight to the next in line: `running` stays as it is.
    if (next !== undefined) next();
    else running--;
  };
  return {
    async run(task) {
      if (running < limit && queue.length === 0) running++;
      else await new Promise<void>((resolve) => queue.push(resolve));
      try {
        return await task();
      } finally {
        release();
      }
    },
    get running() {
      return running;
    },
    get waiting() {
      return queue.length;
    },
  };
}

/**
 * gzip for the registrar's server (`acceptCompression`): compression and
 * decompression (with connect-node's output limit) both take a place of
 * `places`, so no more than its places' codec states exist at once.
 */
export function boundedGzip(places: Places): Compression {
  return {
    name: "gzip",
    compress: (bytes) =>
      places.run(async () => {
        const out = await gzip(bytes);
        return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
      }),
    decompress: (bytes, readMaxBytes) =>
      places.run(() => compressionGzip.decompress(bytes, readMaxBytes)),
  };
}
