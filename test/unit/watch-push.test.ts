/**
 * The pushed WatchConfig stream (`watch-push.ts`, through
 * `WatchStreams.attach`) over a fake cache and a sink the test drives: what
 * it writes, in what call, how it waits for a full transport, and how it
 * ends. The keep-alive interval is set far beyond any test (keep-alives are
 * covered by the integration tests).
 */
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it, vi } from "vitest";
import {
  WatchConfigResponseSchema,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import type { ConfigCache, SubscribeOptions } from "../../services/registrar/cache/config-cache.js";
import type { WatchQuery } from "../../services/registrar/service/request-checks.js";
import type { WatchSink } from "../../services/registrar/service/watch-push.js";
import { createWatchStreams } from "../../services/registrar/service/watch-stream.js";
import { change, fakeCache, gauge } from "../support/fake-watch-cache.js";

const HOUR_MS = 3_600_000;
const QUERY: WatchQuery = { services: new Set(["shop/a"]), view: "all", resumeRevision: 0 };

/** A sink that records what it is sent, and whose fullness, drains and completions the test drives. */
function testSink() {
  const frames: string[] = [];
  const pending: ((error?: Error | null) => void)[] = [];
  const drains: (() => void)[] = [];
  let ended: string | undefined;
  let fullAfter = Number.POSITIVE_INFINITY;
  const sink: WatchSink = {
    send(frame, written) {
      const response = fromBinary(WatchConfigResponseSchema, frame.subarray(5));
      const flag = response.storeUnavailable ? "!" : "";
      frames.push(`${WatchEventType[response.type]}@${response.revision}${flag}`);
      if (written !== undefined) pending.push(written);
      fullAfter--;
      return fullAfter > 0;
    },
    onceDrain(listener) {
      drains.push(listener);
    },
    end(error) {
      if (ended !== undefined) throw new Error("ended twice");
      ended =
        error === undefined
          ? "OK"
          : error instanceof ConnectError
            ? `${Code[error.code]}: ${error.rawMessage}`
            : `${(error as Error).name}: ${(error as Error).message}`;
    },
  };
  return {
    sink,
    frames,
    get ended() {
      return ended;
    },
    /** The transport is full after `n` more frames. */
    fullAfter(n: number) {
      fullAfter = n;
    },
    /** The transport drained: room again, and the drain listeners are told. */
    drain() {
      fullAfter = Number.POSITIVE_INFINITY;
      for (const listener of drains.splice(0)) listener();
    },
    /** The frames written so far are out to the connection. */
    complete() {
      for (const written of pending.splice(0)) written();
    },
  };
}

describe("a pushed watch stream", () => {
  it("writes the initial sync, SYNCED, then each change within the cache's publish call, and ends OK when its client goes away", async () => {
    const f = fakeCache("synced", { kind: "replay", events: [change("shop/a", 4)], revision: 4 });
    const { counter, metrics } = gauge();
    const t = testSink();
    const close = createWatchStreams({ cache: f.cache, keepaliveMs: HOUR_MS, metrics }).attach(
      QUERY,
      t.sink,
    );
    expect(t.frames).toEqual(["DELETE@4", "SYNCED@4"]);
    expect(counter.open).toBe(1);
    f.emit(change("shop/a", 6), change("shop/a", 7));
    // No await between the publish and the writes.
    expect(t.frames).toEqual(["DELETE@4", "SYNCED@4", "DELETE@6", "DELETE@7"]);
    close();
    expect(t.ended).toBe("OK");
    expect(f.fake.unsubscribed).toBe(1);
    expect(counter.open).toBe(0);
  });

  it("waits for a drain inside the initial sync, and holds the changes published meanwhile until it is written", async () => {
    const f = fakeCache("synced", {
      kind: "replay",
      events: [change("shop/a", 2), change("shop/a", 3)],
      revision: 3,
    });
    const t = testSink();
    t.fullAfter(1);
    const close = createWatchStreams({ cache: f.cache, keepaliveMs: HOUR_MS }).attach(
      QUERY,
      t.sink,
    );
    expect(t.frames).toEqual(["DELETE@2"]);
    f.emit(change("shop/a", 5));
    expect(t.frames).toEqual(["DELETE@2"]);
    t.drain();
    expect(t.frames).toEqual(["DELETE@2", "DELETE@3", "SYNCED@3", "DELETE@5"]);
    close();
  });

  it("writes what waits and ends OK when the server drains", async () => {
    const f = fakeCache("synced");
    const t = testSink();
    const drain = new AbortController();
    createWatchStreams({
      cache: f.cache,
      keepaliveMs: HOUR_MS,
      drainSignal: drain.signal,
    }).attach(QUERY, t.sink);
    t.fullAfter(1);
    f.emit(change("shop/a", 6), change("shop/a", 7));
    expect(t.frames).toEqual(["SYNCED@5", "DELETE@6"]);
    drain.abort();
    expect(t.frames).toEqual(["SYNCED@5", "DELETE@6", "DELETE@7"]);
    expect(t.ended).toBe("OK");
  });

  it("ends UNAVAILABLE, telling the client to resume and nothing of the cause, when the cache closes its subscription", async () => {
    const f = fakeCache("synced");
    const t = testSink();
    createWatchStreams({ cache: f.cache, keepaliveMs: HOUR_MS }).attach(QUERY, t.sink);
    f.fake.subscriber?.onClose(new Error("connect ECONNREFUSED 10.0.0.7:2379"));
    expect(t.ended).toMatch(/^Unavailable: .*resume from the last revision applied$/);
    expect(t.ended).not.toContain("10.0.0.7");
    expect(f.fake.unsubscribed).toBe(1);
  });

  it("stays open while the cache has lost the store, flagging its keep-alives, and takes the changes once it is back", async () => {
    vi.useFakeTimers();
    try {
      const f = fakeCache("synced");
      const t = testSink();
      const streams = createWatchStreams({ cache: f.cache, keepaliveMs: 1_000 });
      streams.attach(QUERY, t.sink);
      f.fake.state = "unavailable";
      vi.advanceTimersByTime(1_000);
      t.complete();
      f.fake.state = "synced";
      f.fake.revision = 9;
      f.emit(change("shop/a", 9));
      t.complete();
      vi.advanceTimersByTime(1_000);
      expect(t.frames).toEqual(["SYNCED@5", "KEEPALIVE@5!", "DELETE@9", "KEEPALIVE@9"]);
      expect(t.ended).toBeUndefined();
      // A stream opened meanwhile is served the retained view, and says so on SYNCED.
      f.fake.state = "unavailable";
      const late = testSink();
      streams.attach(QUERY, late.sink);
      expect(late.frames).toEqual(["SYNCED@5!"]); // the fake's initial sync is at 5
      expect(late.ended).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
  });

  it("says at once that the store was lost and that it is back, when idle, without waiting for the keep-alive interval", () => {
    const f = fakeCache("synced");
    const idle = testSink();
    const busy = testSink();
    const streams = createWatchStreams({ cache: f.cache, keepaliveMs: HOUR_MS });
    streams.attach(QUERY, idle.sink);
    idle.complete();
    busy.fullAfter(1);
    streams.attach(QUERY, busy.sink);
    f.storeAvailability(true);
    f.fake.revision = 9;
    f.storeAvailability(false);
    expect(idle.frames).toEqual(["SYNCED@5", "KEEPALIVE@5!", "KEEPALIVE@9"]);
    // A stream with frames still to write says it with its next keep-alive instead.
    expect(busy.frames).toEqual(["SYNCED@5"]);
  });

  it("ends RESOURCE_EXHAUSTED once more than the backlog is behind, counting frames written but not out", async () => {
    const f = fakeCache("synced");
    const t = testSink();
    createWatchStreams({ cache: f.cache, keepaliveMs: HOUR_MS, maxBacklog: 3 }).attach(
      QUERY,
      t.sink,
    );
    f.emit(change("shop/a", 6), change("shop/a", 7), change("shop/a", 8));
    expect(t.ended).toBeUndefined();
    t.complete();
    f.emit(change("shop/a", 9), change("shop/a", 10), change("shop/a", 11));
    expect(t.ended).toBeUndefined();
    f.emit(change("shop/a", 12));
    expect(t.ended).toBe(
      "ResourceExhausted: the stream fell more than 3 events behind; resume from the last revision applied",
    );
  });

  it("waits for the cache while it starts, and ends with the cache's failure when it never syncs", async () => {
    const f = fakeCache("starting");
    const t = testSink();
    createWatchStreams({ cache: f.cache, keepaliveMs: HOUR_MS }).attach(QUERY, t.sink);
    expect(t.frames).toEqual([]);
    f.settle("unavailable");
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.frames).toEqual([]);
    expect(t.ended).toBe("StoreUnavailableError: the cache is not synced");
  });

  it("refuses a stream past maxStreams into its sink, and admits again once one ends", async () => {
    const f = fakeCache("synced");
    const refused: string[] = [];
    const streams = createWatchStreams({
      cache: f.cache,
      keepaliveMs: HOUR_MS,
      maxStreams: 1,
      refusals: { refuse: (reason) => refused.push(reason) },
    });
    const closeFirst = streams.attach(QUERY, testSink().sink);
    const extra = testSink();
    streams.attach(QUERY, extra.sink);
    expect(extra.ended).toMatch(/^ResourceExhausted: the registrar serves at most 1 watch streams/);
    expect(refused).toEqual(["max_watch_streams"]);
    closeFirst();
    const again = testSink();
    streams.attach(QUERY, again.sink);
    expect(again.frames).toEqual(["SYNCED@5"]);
  });

  it("observes a change's fan-out once its last stream's frame is out, and shares one frame among the streams", async () => {
    const subscribers: SubscribeOptions[] = [];
    const cache = {
      state: "synced",
      revision: 4,
      whenSettled: () => Promise.resolve(),
      onStoreAvailability: () => () => {},
      subscribe(options: SubscribeOptions) {
        subscribers.push(options);
        return { initial: { kind: "replay", events: [], revision: 4 }, unsubscribe: () => {} };
      },
    } as unknown as ConfigCache;
    const observed: number[] = [];
    const streams = createWatchStreams({
      cache,
      keepaliveMs: HOUR_MS,
      metrics: { addWatchStreams: () => {}, observeWatchFanout: (s) => observed.push(s) },
    });
    const sent: Uint8Array[] = [];
    const sinks = [testSink(), testSink()];
    const closes: (() => void)[] = [];
    for (const t of sinks) {
      const send = t.sink.send;
      t.sink.send = (frame, written) => {
        sent.push(frame);
        return send(frame, written);
      };
      closes.push(streams.attach(QUERY, t.sink));
    }
    const event = change("shop/a", 6);
    for (const subscriber of subscribers) subscriber.onEvents([event]);
    expect(sent[2]).toBe(sent[3]);
    sinks[0]?.complete();
    expect(observed).toEqual([]);
    sinks[1]?.complete();
    expect(observed).toHaveLength(1);
    for (const close of closes) close();
  });
});
