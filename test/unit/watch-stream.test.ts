/**
 * The WatchConfig stream's shell over a fake cache: waiting for the cache,
 * the subscription's lifetime, live changes, and how a stream ends (client
 * gone, drain, store lost, backlog overflow). The keep-alive interval is set
 * far beyond any test, so no timer fires; keep-alives are covered by the
 * integration tests.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  type WatchConfigResponse,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import type {
  CacheState,
  ConfigCache,
  SubscribeOptions,
} from "../../services/registrar/cache/config-cache.js";
import type { WatchQuery } from "../../services/registrar/service/request-checks.js";
import { createWatchStreams } from "../../services/registrar/service/watch-stream.js";
import { change, fakeCache, gauge } from "../support/fake-watch-cache.js";

const HOUR_MS = 3_600_000;
const QUERY: WatchQuery = { services: new Set(["shop/a"]), view: "all", resumeRevision: 0 };

/** A response's type and revision, e.g. `SYNCED@5`. */
const label = (r: IteratorResult<WatchConfigResponse>) =>
  r.done ? "done" : `${WatchEventType[r.value.type]}@${r.value.revision}`;

/**
 * How the stream's next read ends: a response, done, or the error (a
 * ConnectError's code, or another error's name, and its message).
 */
async function nextOf(stream: AsyncGenerator<WatchConfigResponse>): Promise<string> {
  try {
    return label(await stream.next());
  } catch (error) {
    if (error instanceof ConnectError) return `${Code[error.code]}: ${error.rawMessage}`;
    return `${(error as Error).name}: ${(error as Error).message}`;
  }
}

describe("a watch stream", () => {
  it("sends the initial sync, SYNCED, then each change, and ends cleanly when its client goes away", async () => {
    const { cache, fake, emit } = fakeCache("synced", {
      kind: "replay",
      events: [change("shop/a", 4)],
      revision: 4,
    });
    const { counter, metrics } = gauge();
    const client = new AbortController();
    const stream = createWatchStreams({ cache, keepaliveMs: HOUR_MS, metrics }).open(
      QUERY,
      client.signal,
      false,
    );
    expect(await nextOf(stream)).toBe("DELETE@4");
    expect(fake.subscriber).toMatchObject({
      services: QUERY.services,
      view: "all",
      resumeRevision: 0,
    });
    expect(counter.open).toBe(1);
    expect(await nextOf(stream)).toBe("SYNCED@4");
    emit(change("shop/a", 6), change("shop/a", 7));
    expect([await nextOf(stream), await nextOf(stream)]).toEqual(["DELETE@6", "DELETE@7"]);
    client.abort();
    expect(await nextOf(stream)).toBe("done");
    expect(fake.unsubscribed).toBe(1);
    expect(counter.open).toBe(0);
  });

  const endings: [
    string,
    (f: ReturnType<typeof fakeCache>, drain: AbortController) => void,
    string,
  ][] = [
    ["the server drains", (_, drain) => drain.abort(), "done"],
    [
      "the cache closes its subscription, after the changes before (the cause withheld)",
      (f) => {
        f.emit(change("shop/a", 6));
        f.fake.subscriber?.onClose(new Error("the watch subscriber failed: 10.0.0.7:2379"));
      },
      // The client is told what to do, never why inside the registrar.
      "DELETE@6 Unavailable: the registrar failed to send this stream's changes; reconnect and resume from the last revision applied",
    ],
    [
      "the client falls more than the backlog behind",
      (f) => f.emit(change("shop/a", 6), change("shop/a", 7), change("shop/a", 8)),
      "ResourceExhausted: the stream fell more than 2 events behind; resume from the last revision applied",
    ],
  ];
  for (const [name, act, expected] of endings) {
    it(`ends when ${name}: ${expected}`, async () => {
      const f = fakeCache("synced");
      const drain = new AbortController();
      const { counter, metrics } = gauge();
      const stream = createWatchStreams({
        cache: f.cache,
        drainSignal: drain.signal,
        keepaliveMs: HOUR_MS,
        maxBacklog: 2,
        metrics,
      }).open(QUERY, new AbortController().signal, true);
      expect(await nextOf(stream)).toBe("SYNCED@5");
      act(f, drain);
      const rest: string[] = [];
      for (let last = ""; !last.startsWith("done") && !last.includes(":"); ) {
        last = await nextOf(stream);
        rest.push(last);
      }
      expect(rest.join(" ")).toBe(expected);
      expect(f.fake.unsubscribed).toBe(1);
      expect(counter.open).toBe(0);
    });
  }

  it("says at once that the store was lost and that it is back, without waiting for the keep-alive interval", async () => {
    const f = fakeCache("synced");
    const client = new AbortController();
    const stream = createWatchStreams({ cache: f.cache, keepaliveMs: HOUR_MS }).open(
      QUERY,
      client.signal,
      false,
    );
    const flagged = async () => {
      const next = await stream.next();
      return `${label(next)}${next.done !== true && next.value.storeUnavailable ? "!" : ""}`;
    };
    expect(await flagged()).toBe("SYNCED@5");
    f.storeAvailability(true);
    expect(await flagged()).toBe("KEEPALIVE@5!");
    f.fake.revision = 9;
    f.storeAvailability(false);
    expect(await flagged()).toBe("KEEPALIVE@9");
    client.abort();
    expect(await flagged()).toBe("done");
  });

  it("opened while the server drains, sends the initial sync and ends", async () => {
    const f = fakeCache("synced");
    const drain = new AbortController();
    drain.abort();
    const streams = createWatchStreams({
      cache: f.cache,
      drainSignal: drain.signal,
      keepaliveMs: HOUR_MS,
    });
    const stream = streams.open(QUERY, new AbortController().signal, false);
    expect([await nextOf(stream), await nextOf(stream)]).toEqual(["SYNCED@5", "done"]);
  });

  const starts: [CacheState, string[]][] = [
    ["synced", ["SYNCED@5", "subscribed"]],
    ["unavailable", ["StoreUnavailableError: the cache is not synced", "not subscribed"]],
  ];
  for (const [settledAs, expected] of starts) {
    it(`opened while the cache starts, waits for it, and then finds it ${settledAs}`, async () => {
      const f = fakeCache("starting");
      const { counter, metrics } = gauge();
      const stream = createWatchStreams({ cache: f.cache, keepaliveMs: HOUR_MS, metrics }).open(
        QUERY,
        new AbortController().signal,
        false,
      );
      const first = nextOf(stream);
      expect(f.fake.subscriber).toBeUndefined();
      f.settle(settledAs);
      expect([
        await first,
        f.fake.subscriber === undefined ? "not subscribed" : "subscribed",
      ]).toEqual(expected);
      await stream.return(undefined);
      expect(counter.open).toBe(0);
    });
  }
});

describe("the open-stream limit", () => {
  it("refuses one more with RESOURCE_EXHAUSTED and counts it, and admits again once one ends", async () => {
    const f = fakeCache("starting");
    const refused: string[] = [];
    const streams = createWatchStreams({
      cache: f.cache,
      keepaliveMs: HOUR_MS,
      maxStreams: 2,
      refusals: { refuse: (reason) => refused.push(reason) },
    });
    // Streams waiting for the cache count too.
    const first = streams.open(QUERY, new AbortController().signal, false);
    const second = streams.open(QUERY, new AbortController().signal, false);
    const firstRead = nextOf(first);
    const secondRead = nextOf(second);
    expect(await nextOf(streams.open(QUERY, new AbortController().signal, false))).toBe(
      "ResourceExhausted: the registrar serves at most 2 watch streams and all are taken; retry later (another replica may have room)",
    );
    expect(refused).toEqual(["max_watch_streams"]);
    f.settle("synced");
    expect([await firstRead, await secondRead]).toEqual(["SYNCED@5", "SYNCED@5"]);
    await first.return(undefined);
    const third = streams.open(QUERY, new AbortController().signal, false);
    expect(await nextOf(third)).toBe("SYNCED@5");
    expect(refused).toEqual(["max_watch_streams"]);
    await Promise.all([second.return(undefined), third.return(undefined)]);
  });
});

describe("the watch fan-out metric", () => {
  it("observes a change once the last stream it was handed to has written it", async () => {
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
    const metrics = {
      addWatchStreams: () => {},
      observeWatchFanout: (seconds: number) => observed.push(seconds),
    };
    const streams = createWatchStreams({ cache, keepaliveMs: HOUR_MS, metrics });
    const clients = [new AbortController(), new AbortController()];
    const [a, b] = clients.map((client) => streams.open(QUERY, client.signal, false)) as [
      AsyncGenerator<WatchConfigResponse>,
      AsyncGenerator<WatchConfigResponse>,
    ];
    expect([await nextOf(a), await nextOf(b)]).toEqual(["SYNCED@4", "SYNCED@4"]);
    for (const subscriber of subscribers) subscriber.onEvents([change("shop/a", 6)]);
    expect([await nextOf(a), await nextOf(b)]).toEqual(["DELETE@6", "DELETE@6"]);
    // Asking for the next response means the previous one was written.
    const afterA = nextOf(a);
    await new Promise((resolve) => setImmediate(resolve));
    expect(observed).toEqual([]);
    const afterB = nextOf(b);
    await new Promise((resolve) => setImmediate(resolve));
    expect(observed).toHaveLength(1);
    expect(observed[0]).toBeGreaterThanOrEqual(0);
    for (const client of clients) client.abort();
    expect([await afterA, await afterB]).toEqual(["done", "done"]);
  });

  it("makes one response per change for every stream it goes to", async () => {
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
    const streams = createWatchStreams({ cache, keepaliveMs: HOUR_MS });
    const client = new AbortController();
    const [a, b, json] = [true, true, false].map((binary) =>
      streams.open(QUERY, client.signal, binary),
    ) as AsyncGenerator<WatchConfigResponse>[] as [
      AsyncGenerator<WatchConfigResponse>,
      AsyncGenerator<WatchConfigResponse>,
      AsyncGenerator<WatchConfigResponse>,
    ];
    for (const stream of [a, b, json]) expect(await nextOf(stream)).toBe("SYNCED@4");
    const event = change("shop/a", 6);
    for (const subscriber of subscribers) subscriber.onEvents([event]);
    const [first, second, third] = [
      (await a.next()).value,
      (await b.next()).value,
      (await json.next()).value,
    ];
    expect(first).toBe(second);
    expect(third).not.toBe(first);
    expect(third).toMatchObject({ service: "shop/a", revision: 6n });
    client.abort();
    await Promise.all([a.return(undefined), b.return(undefined), json.return(undefined)]);
  });
});
