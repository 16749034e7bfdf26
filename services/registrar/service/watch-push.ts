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
import type { CacheEvent, ConfigCache, InitialSync, Subscription } from "../cache/config-cache.js";
import { subscriptionFailed } from "./client-errors.js";
import type { FanoutTracker } from "./fanout-tracker.js";
import type { WatchQuery } from "./request-checks.js";
import { createOutbox, type Outbox, type OutboxItem } from "./watch-outbox.js";

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

/** What a {@link PushedStream} shares with the other streams of its registrar. */
export interface PushParts {
  /** The cache streams are served from. */
  readonly cache: ConfigCache;
  /** The most frames that may be behind before the stream is ended. */
  readonly maxBacklog: number;
  /** A live change's frame, made once and shared by every stream. */
  readonly itemOf: (event: CacheEvent) => OutboxItem;
  /** The frames of a subscription's initial sync, SYNCED last (made per stream). */
  readonly initialItems: (initial: InitialSync) => Iterator<OutboxItem>;
  /** A KEEPALIVE frame at `revision`, flagged while the cache serves the view kept through a store loss. */
  readonly keepaliveFrame: (revision: number, storeUnavailable: boolean) => Uint8Array;
  /** The fan-out of live changes, shared with every stream. */
  readonly fanout: FanoutTracker;
  /** Told each change's fan-out time, once its last stream wrote it. */
  readonly observeFanout: ((seconds: number) => void) | undefined;
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
 * One pushed stream, for a checked and admitted request. It holds no timer,
 * promise or signal of its own (a thousand of them are idle most of the
 * time): its owner (`watch-stream.ts`) calls {@link PushedStream.start} once
 * the cache has left `starting`, {@link PushedStream.keepalive} on a shared
 * tick, {@link PushedStream.drain} when the server drains and
 * {@link PushedStream.close} when the client went away; the stream ends its
 * sink exactly once (OK; UNAVAILABLE when the registrar failed to feed it; RESOURCE_EXHAUSTED
 * when the client falls behind) and then calls `onFinish`.
 */
export class PushedStream {
  private ended = false;
  private closing = false;
  private drainArmed = false;
  private initial: Iterator<OutboxItem> | undefined;
  private subscription: Subscription | undefined;
  private readonly outbox: Outbox;

  /** Creates the stream; nothing is sent before {@link PushedStream.start}. */
  constructor(
    private readonly parts: PushParts,
    private readonly query: WatchQuery,
    private readonly sink: WatchSink,
    private readonly onFinish: () => void,
  ) {
    this.outbox = createOutbox(this.send, parts.maxBacklog);
  }

  /** Whether the stream has ended. */
  get finished(): boolean {
    return this.ended;
  }

  /** Subscribes and writes the initial sync (waiting for the transport when it is full). */
  start(): void {
    if (this.ended) return;
    try {
      this.subscription = this.parts.cache.subscribe({
        services: this.query.services,
        view: this.query.view,
        resumeRevision: this.query.resumeRevision,
        onEvents: this.onEvents,
        onClose: () => this.finish(subscriptionFailed()),
      });
    } catch (error) {
      this.finish(error);
      return;
    }
    this.initial = this.parts.initialItems(this.subscription.initial);
    this.writeInitial();
  }

  /** The client went away: ends OK (the sink may ignore it). */
  close(): void {
    this.finish();
  }

  /** The server drains: what waits goes out, then the end (after the initial sync, if still in it). */
  drain(): void {
    this.closing = true;
    if (this.subscription === undefined) this.finish();
    else if (this.outbox.live) this.closeNow();
  }

  /** Sends a KEEPALIVE when the stream is live and idle. */
  keepalive(): void {
    if (this.ended || !this.outbox.idle) return;
    const { cache } = this.parts;
    const frame = this.parts.keepaliveFrame(cache.revision, cache.state === "unavailable");
    this.outbox.push([{ frame, change: undefined }]);
  }

  private readonly onEvents = (events: CacheEvent[]): void => {
    if (this.ended) return;
    const { fanout, itemOf } = this.parts;
    const now = performance.now();
    const items = events.map((event) => {
      fanout.handed(event.revision, now);
      return itemOf(event);
    });
    if (!this.outbox.push(items)) {
      this.finish(
        new ConnectError(
          `the stream fell more than ${this.parts.maxBacklog} events behind; resume from the last revision applied`,
          Code.ResourceExhausted,
        ),
      );
    }
  };

  /** Writes the initial sync until it is done or the transport is full (then again on drain). */
  private readonly writeInitial = (): void => {
    const initial = this.initial;
    while (!this.ended && initial !== undefined) {
      const next = initial.next();
      if (next.done === true) {
        this.initial = undefined;
        this.outbox.goLive(false);
        if (this.closing) this.closeNow();
        return;
      }
      if (!this.sink.send(next.value.frame)) {
        this.sink.onceDrain(this.writeInitial);
        return;
      }
    }
  };

  // Called by the transport, in order, as each frame the outbox wrote is out.
  private readonly onWritten = (error?: Error | null): void => {
    const change = this.outbox.completed()?.change;
    if (change === undefined || error != null) return;
    const ms = this.parts.fanout.written(change, performance.now());
    if (ms !== undefined) this.parts.observeFanout?.(ms / 1000);
  };

  private readonly send = (item: OutboxItem): boolean => {
    const ok = this.sink.send(item.frame, this.onWritten);
    if (!ok && !this.drainArmed && !this.ended) {
      this.drainArmed = true;
      this.sink.onceDrain(this.onDrain);
    }
    return ok;
  };

  private readonly onDrain = (): void => {
    this.drainArmed = false;
    this.outbox.drained();
  };

  private closeNow(): void {
    this.outbox.flushAll();
    this.finish();
  }

  private finish(error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.subscription?.unsubscribe();
    this.sink.end(error);
    this.onFinish();
  }
}
