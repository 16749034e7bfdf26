/**
 * WatchConfig streams, served from the config cache (one store watch however
 * many streams). A stream opened while the cache is still starting waits for
 * it; then it subscribes, sends what the subscription starts with and
 * SYNCED, and then each change as the cache reports it (the messages are
 * `watch-responses.ts`), with a KEEPALIVE whenever it idles for the
 * keep-alive interval. Changes wait in a bounded backlog for a slow client:
 * one that falls further behind is ended with RESOURCE_EXHAUSTED (it resumes
 * from the last revision it applied). A stream ends cleanly (OK) when its
 * client goes away or the server drains, and with UNAVAILABLE when the
 * registrar failed to feed it; a store loss does not end it (it keeps the
 * view the cache retained, and its keep-alives say the store is lost). At most `maxStreams` are open at once (waiting for the
 * cache included): one more is refused with RESOURCE_EXHAUSTED, telling the
 * client to retry later, and counted as a refusal. When the cache loses the
 * store or gets it back, every idle stream gets a KEEPALIVE saying so at
 * once (one that is busy says it on its next one).
 *
 * What a stream holds is bounded: the backlog by `maxBacklog` events, and
 * what is on its way to a client that does not read by HTTP/2 flow control
 * and the response stream's buffer (the next event is taken from the backlog
 * only once the previous one was written).
 */
import { setMaxListeners } from "node:events";
import { toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type WatchConfigResponse,
  WatchConfigResponseSchema,
  WatchEventType,
} from "../../../gen/aether/registry/v1/config_service_pb.js";
import { createAsyncQueue, QueueOverflowError } from "../../runtime/async-queue.js";
import type { CacheEvent, ConfigCache } from "../cache/config-cache.js";
import type { RegistrarMetrics } from "../registrar-metrics.js";
import { admitOneMore } from "../server/admission-rules.js";
import type { Refusals } from "../server/refusals.js";
import { subscriptionFailed } from "./client-errors.js";
import { createFanoutTracker, type FanoutTracker } from "./fanout-tracker.js";
import type { WatchQuery } from "./request-checks.js";
import { frameMessage } from "./watch-lane-protocol.js";
import type { OutboxItem } from "./watch-outbox.js";
import { PushedStream, type PushParts, type WatchSink, waitUntilSynced } from "./watch-push.js";
import { eventResponse, initialResponses, keepaliveResponse } from "./watch-responses.js";

/** Options of {@link createWatchStreams}. */
export interface WatchStreamsOptions {
  /** The cache streams are served from. */
  readonly cache: ConfigCache;
  /** Aborted when the server drains: open streams then end cleanly (OK). */
  readonly drainSignal?: AbortSignal;
  /** The interval between keep-alive events on idle streams; default 15000 ms. */
  readonly keepaliveMs?: number;
  /** The most events a stream may have unsent before it is ended; default 50000. */
  readonly maxBacklog?: number;
  /** Where the number of open streams is counted; optional. */
  readonly metrics?: Pick<RegistrarMetrics, "addWatchStreams"> &
    Partial<Pick<RegistrarMetrics, "observeWatchFanout">>;
  /** The most streams open at once; default {@link DEFAULT_MAX_WATCH_STREAMS}. */
  readonly maxStreams?: number;
  /** Where refused streams are counted and logged; optional. */
  readonly refusals?: Refusals;
}

/** The default of {@link WatchStreamsOptions.maxStreams}. */
export const DEFAULT_MAX_WATCH_STREAMS = 2000;
/** The default of {@link WatchStreamsOptions.maxBacklog}. */
export const DEFAULT_MAX_WATCH_BACKLOG = 50_000;

/** Opens WatchConfig streams; see {@link createWatchStreams}. */
export interface WatchStreams {
  /**
   * The responses of one stream for a checked request, until `signal` (the
   * client went away) or the drain signal aborts, or the stream fails: with
   * the cache's StoreUnavailableError when the cache has never synced (a
   * store loss after that does not end it: the stream keeps the retained
   * view and says so in its keep-alives), a ConnectError UNAVAILABLE when
   * the registrar failed to feed it, and RESOURCE_EXHAUSTED
   * when the client falls behind or when `maxStreams` are open already
   * (before anything is sent). Its subscription ends with the stream.
   */
  open(
    query: WatchQuery,
    signal: AbortSignal,
    binary: boolean,
  ): AsyncGenerator<WatchConfigResponse>;
  /**
   * The same stream, binary, pushed into `sink` (see `watch-push.ts`):
   * refused with RESOURCE_EXHAUSTED into the sink when `maxStreams` are
   * open. Returns what to call when the client goes away (the stream then
   * ends OK). The sink is ended exactly once; nothing throws.
   */
  attach(query: WatchQuery, sink: WatchSink): () => void;
}

/** Creates the WatchConfig streams of a cache. */
export function createWatchStreams(options: WatchStreamsOptions): WatchStreams {
  const { cache, drainSignal, metrics } = options;
  const keepaliveMs = options.keepaliveMs ?? 15_000;
  const maxBacklog = options.maxBacklog ?? DEFAULT_MAX_WATCH_BACKLOG;
  const maxStreams = options.maxStreams ?? DEFAULT_MAX_WATCH_STREAMS;
  // Every open watch stream listens for the drain: thousands of listeners are expected.
  if (drainSignal !== undefined) setMaxListeners(0, drainSignal);

  let open = 0;
  // The fan-out of each live change: handed to streams by the cache's publish, written by each.
  const fanout = createFanoutTracker();
  const responseOf = sharedResponses();
  const pushParts = pushPartsFor(
    cache,
    maxBacklog,
    fanout,
    responseOf,
    metrics?.observeWatchFanout,
  );
  // The pushed streams: one drain listener and one keep-alive tick for all of them.
  const pushed = new Set<PushedStream>();
  let tick: NodeJS.Timeout | undefined;
  drainSignal?.addEventListener(
    "abort",
    () => {
      for (const stream of [...pushed]) stream.drain();
    },
    { once: true },
  );
  const release = (stream: PushedStream) => {
    if (!pushed.delete(stream)) return;
    open--;
    metrics?.addWatchStreams(-1);
    if (pushed.size === 0 && tick !== undefined) {
      clearInterval(tick);
      tick = undefined;
    }
  };
  // The streams served by generators, each a function that queues a keep-alive when it is idle.
  const nudges = new Set<() => void>();
  cache.onStoreAvailability(() => {
    for (const stream of pushed) stream.keepalive();
    for (const nudge of nudges) nudge();
  });
  const isChange = (response: WatchConfigResponse): boolean =>
    response.type === WatchEventType.UPSERT || response.type === WatchEventType.DELETE;

  async function* serve(
    query: WatchQuery,
    signal: AbortSignal,
    binary: boolean,
  ): AsyncGenerator<WatchConfigResponse> {
    if (cache.state === "starting") {
      // Right after start the cache is still listing: wait for it rather than
      // failing the stream (a store that is down fails it below instead).
      await waitUntilSynced(cache, [signal, drainSignal]);
    }
    const queue = createAsyncQueue<WatchConfigResponse>(maxBacklog);
    const subscription = cache.subscribe({
      services: query.services,
      view: query.view,
      resumeRevision: query.resumeRevision,
      onEvents: (events) => {
        const now = performance.now();
        for (const event of events) fanout.handed(event.revision, now);
        queue.push(...events.map((event) => responseOf(event, binary)));
      },
      onClose: () => queue.fail(subscriptionFailed()),
    });
    const end = () => queue.close();
    signal.addEventListener("abort", end);
    drainSignal?.addEventListener("abort", end);
    if (drainSignal?.aborted) end();
    const nudge = () => {
      if (queue.size === 0) {
        queue.push(keepaliveResponse(cache.revision, cache.state === "unavailable"));
      }
    };
    const keepalive = setInterval(nudge, keepaliveMs);
    nudges.add(nudge);
    metrics?.addWatchStreams(1);
    try {
      const storeUnavailable = cache.state === "unavailable";
      for (const response of initialResponses(subscription.initial, binary, storeUnavailable)) {
        yield response;
      }
      for await (const response of queue) {
        yield response;
        // Resumed: the response was written (the server asks for the next one after writing it).
        if (!isChange(response)) continue;
        const ms = fanout.written(Number(response.revision), performance.now());
        if (ms !== undefined) metrics?.observeWatchFanout?.(ms / 1000);
      }
    } catch (error) {
      if (error instanceof QueueOverflowError) {
        throw new ConnectError(
          `the stream fell more than ${maxBacklog} events behind; resume from the last revision applied`,
          Code.ResourceExhausted,
        );
      }
      throw error;
    } finally {
      clearInterval(keepalive);
      nudges.delete(nudge);
      subscription.unsubscribe();
      signal.removeEventListener("abort", end);
      drainSignal?.removeEventListener("abort", end);
      metrics?.addWatchStreams(-1);
    }
  }

  /** Takes a stream's place, or throws RESOURCE_EXHAUSTED when all are taken. */
  function admit(): void {
    if (!admitOneMore(open, maxStreams)) {
      options.refusals?.refuse("max_watch_streams", { open, maxStreams });
      throw new ConnectError(
        `the registrar serves at most ${maxStreams} watch streams and all are taken; retry later (another replica may have room)`,
        Code.ResourceExhausted,
      );
    }
    open++;
  }

  return {
    async *open(query, signal, binary) {
      admit();
      try {
        yield* serve(query, signal, binary);
      } finally {
        open--;
      }
    },
    attach(query, sink) {
      try {
        admit();
      } catch (error) {
        sink.end(error);
        return () => {};
      }
      const stream: PushedStream = new PushedStream(pushParts, query, sink, () => release(stream));
      pushed.add(stream);
      metrics?.addWatchStreams(1);
      tick ??= setInterval(() => {
        for (const each of pushed) each.keepalive();
      }, keepaliveMs);
      if (drainSignal?.aborted === true) stream.drain();
      else if (cache.state !== "starting") stream.start();
      else {
        // Right after start the cache is still listing: wait for it (a store that is down fails the stream).
        void cache.whenSettled().then(() => stream.start());
      }
      return () => stream.close();
    },
  };
}

/**
 * The response of a live change in one encoding, made for the first stream
 * it goes to and shared by the others (the cache hands every stream the same
 * event objects; the responses go when the events do).
 */
function sharedResponses(): (event: CacheEvent, binary: boolean) => WatchConfigResponse {
  const binaryResponses = new WeakMap<CacheEvent, WatchConfigResponse>();
  const jsonResponses = new WeakMap<CacheEvent, WatchConfigResponse>();
  return (event, binary) => {
    const made = binary ? binaryResponses : jsonResponses;
    let response = made.get(event);
    if (response === undefined) {
      response = eventResponse(event, binary);
      made.set(event, response);
    }
    return response;
  };
}

/**
 * What the pushed streams of a cache share: each live change's frame made
 * once (from its shared binary response) for all of them, the keep-alive
 * frame of the current revision, and the fan-out bookkeeping.
 */
function pushPartsFor(
  cache: ConfigCache,
  maxBacklog: number,
  fanout: FanoutTracker,
  responseOf: (event: CacheEvent, binary: boolean) => WatchConfigResponse,
  observeFanout: ((seconds: number) => void) | undefined,
): PushParts {
  const items = new WeakMap<CacheEvent, OutboxItem>();
  const frameOf = (response: WatchConfigResponse): Uint8Array =>
    frameMessage(toBinary(WatchConfigResponseSchema, response));
  let keepaliveMemo: { revision: number; storeUnavailable: boolean; frame: Uint8Array } | undefined;
  return {
    cache,
    maxBacklog,
    fanout,
    observeFanout,
    itemOf(event) {
      let item = items.get(event);
      if (item === undefined) {
        item = { frame: frameOf(responseOf(event, true)), change: event.revision };
        items.set(event, item);
      }
      return item;
    },
    *initialItems(initial) {
      for (const response of initialResponses(initial, true, cache.state === "unavailable")) {
        yield { frame: frameOf(response), change: undefined };
      }
    },
    keepaliveFrame(revision, storeUnavailable) {
      if (
        keepaliveMemo?.revision !== revision ||
        keepaliveMemo.storeUnavailable !== storeUnavailable
      ) {
        const frame = frameOf(keepaliveResponse(revision, storeUnavailable));
        keepaliveMemo = { revision, storeUnavailable, frame };
      }
      return keepaliveMemo.frame;
    },
  };
}
