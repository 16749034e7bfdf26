/**
 * A WatchConfig stream pushed to its transport: the same stream as
 * `watch-stream.ts` serves through connect-es (wait for the cache, the
 * initial sync, SYNCED, then each change, KEEPALIVE when idle, a bounded
 * backlog, OK on drain, UNAVAILABLE when the store is lost), but written
 * straight to a {@link WatchSink} instead of yielded to connect-es's
 * per-stream pipeline. A live change goes out in the cache's publish call
 * itself, as one framing shared by every stream (see `watch-outbox.ts`).
 *
 * The frames are binary (protobuf) only; the sink frames nothing itself.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { CacheEvent, ConfigCache, InitialSync } from "../cache/config-cache.js";
import { storeUnavailable } from "./client-errors.js";
import type { FanoutTracker } from "./fanout-tracker.js";
import type { WatchQuery } from "./request-checks.js";
import { createOutbox, type OutboxItem } from "./watch-outbox.js";

/** Where a pushed stream writes; implemented per protocol by `watch-lane.ts`. */
export interface WatchSink {
  /**
   * Writes one framed message. Returns false when the transport's buffer is
   * full (the frame was taken; wait for {@link WatchSink.onceDrain}).
   * `written` is called once the frame is out to the connection (HTTP/2
   * flow control may hold it back), with an error when it never will be;
   * the calls come in the order of the sends.
   */
  send(frame: Uint8Array, written?: (error?: Error | null) => void): boolean;
  /** Calls `listener` once, the next time a full transport can take more. */
  onceDrain(listener: () => void): void;
  /**
   * Ends the stream: OK when `error` is undefined, else with it (a
   * ConnectError, or anything else for the sink to map). Called once.
   */
  end(error?: unknown): void;
}

/** What {@link servePush} shares with the other streams of its registrar. */
export interface PushParts {
  /** The cache streams are served from. */
  readonly cache: ConfigCache;
  /** Aborted when the server drains: the stream writes what waits and ends OK. */
  readonly drainSignal: AbortSignal | undefined;
  /** The interval between keep-alive events on an idle stream. */
  readonly keepaliveMs: number;
  /** The most frames that may wait before the stream is ended. */
  readonly maxBacklog: number;
  /** A live change's frame, made once and shared by every stream. */
  readonly itemOf: (event: CacheEvent) => OutboxItem;
  /** The frames of a subscription's initial sync, SYNCED last (made per stream). */
  readonly initialItems: (initial: InitialSync) => Iterable<OutboxItem>;
  /** A KEEPALIVE frame at `revision`. */
  readonly keepaliveFrame: (revision: number) => Uint8Array;
  /** The fan-out of live changes, shared with every stream. */
  readonly fanout: FanoutTracker;
  /** Told each change's fan-out time, once its last stream wrote it. */
  readonly observeFanout: ((seconds: number) => void) | undefined;
  /** Counts open streams (+1, -1). */
  readonly countStreams: ((delta: number) => void) | undefined;
}

/**
 * Resolves when the cache first syncs, when it gives up starting (the store is
 * unavailable), or when a signal aborts, whichever comes first.
 */
export async function waitUntilSynced(
  cache: ConfigCache,
  signals: readonly (AbortSignal | undefined)[],
): Promise<void> {
  const live = signals.filter((signal): signal is AbortSignal => signal !== undefined);
  if (live.some((signal) => signal.aborted)) return;
  const aborted = AbortSignal.any(live);
  await Promise.race([
    cache.whenSettled(),
    new Promise<void>((resolve) =>
      aborted.addEventListener("abort", () => resolve(), { once: true }),
    ),
  ]);
}

/**
 * Serves one stream for a checked, admitted request into `sink` until
 * `signal` aborts (the client went away: the sink is ended OK, which it may
 * ignore), the server drains (OK, after what waits), the store is lost
 * (UNAVAILABLE) or the client falls behind (RESOURCE_EXHAUSTED). Resolves
 * once the sink was ended; never rejects.
 */
export async function servePush(
  parts: PushParts,
  query: WatchQuery,
  signal: AbortSignal,
  sink: WatchSink,
): Promise<void> {
  const { cache, drainSignal } = parts;
  if (cache.state === "starting") await waitUntilSynced(cache, [signal, drainSignal]);
  if (signal.aborted || drainSignal?.aborted === true) {
    sink.end();
    return;
  }
  let ended = false;
  let closing = false;
  let settle: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    settle = resolve;
  });
  let wake: (() => void) | undefined;
  let drainArmed = false;
  // Called by the transport, in order, as each frame the outbox wrote is out.
  const onWritten = (error?: Error | null) => {
    const change = outbox.completed()?.change;
    if (change === undefined || error != null) return;
    const ms = parts.fanout.written(change, performance.now());
    if (ms !== undefined) parts.observeFanout?.(ms / 1000);
  };
  const send = (item: OutboxItem): boolean => {
    const ok = sink.send(item.frame, onWritten);
    if (!ok) armDrain();
    return ok;
  };
  const outbox = createOutbox(send, parts.maxBacklog);
  const finish = (error?: unknown) => {
    if (ended) return;
    ended = true;
    clearInterval(keepalive);
    subscription?.unsubscribe();
    signal.removeEventListener("abort", onAbort);
    drainSignal?.removeEventListener("abort", onClose);
    parts.countStreams?.(-1);
    wake?.();
    sink.end(error);
    settle();
  };
  const onDrain = () => {
    drainArmed = false;
    outbox.drained();
  };
  const armDrain = () => {
    if (drainArmed || ended) return;
    drainArmed = true;
    sink.onceDrain(onDrain);
  };
  const onAbort = () => finish();
  const onClose = () => {
    closing = true;
    // Live: what waits goes out, then the end; still syncing: once the initial sync is written.
    if (outbox.live) closeNow();
  };
  const closeNow = () => {
    outbox.flushAll();
    finish();
  };

  let subscription: ReturnType<ConfigCache["subscribe"]> | undefined;
  const keepalive = setInterval(() => {
    if (outbox.idle)
      outbox.push([{ frame: parts.keepaliveFrame(cache.revision), change: undefined }]);
  }, parts.keepaliveMs);
  parts.countStreams?.(1);
  signal.addEventListener("abort", onAbort);
  drainSignal?.addEventListener("abort", onClose);
  try {
    subscription = cache.subscribe({
      services: query.services,
      view: query.view,
      resumeRevision: query.resumeRevision,
      onEvents: (events) => {
        if (ended) return;
        const now = performance.now();
        const items = events.map((event) => {
          parts.fanout.handed(event.revision, now);
          return parts.itemOf(event);
        });
        if (!outbox.push(items)) {
          finish(
            new ConnectError(
              `the stream fell more than ${parts.maxBacklog} events behind; resume from the last revision applied`,
              Code.ResourceExhausted,
            ),
          );
        }
      },
      onClose: (error) => finish(storeUnavailable(error)),
    });
  } catch (error) {
    finish(error);
    return done;
  }
  // The initial sync, frame by frame, waiting for the transport whenever it is full.
  let full = false;
  for (const item of parts.initialItems(subscription.initial)) {
    if (full) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        sink.onceDrain(resolve);
      });
      wake = undefined;
      full = false;
    }
    if (ended) return done;
    full = !sink.send(item.frame);
  }
  if (ended) return done;
  outbox.goLive(full);
  if (full) armDrain();
  if (closing) closeNow();
  return done;
}
