/**
 * The live feed's shell: follows `WatchConfig` (EFFECTIVE view, every
 * service and mesh record) through the dashboard, and hands what happens to
 * the pure `live-reducer.ts`.
 *
 * - Events are applied in batches: one state (one render) per macrotask,
 *   however many frames arrived, so a 1,000-projection snapshot is one update.
 * - The stream is opened again after it fails or ends, resuming from the last
 *   revision applied (the registrar replays, or sends a full snapshot when it
 *   cannot), after a backoff: 250 ms doubling to 10 s, with jitter, reset by
 *   each SYNCED.
 * - A stream silent for {@link SILENCE_MS} (three registrar keep-alives) is
 *   taken as dead: aborted and opened again.
 * - With `deferred`, nothing opens until `start()`: the console's first view
 *   makes its own first call before the stream's snapshot competes with it
 *   (for the registrar and the dashboard, and the page's main thread).
 * - One object owns every timer; `stop()` aborts the stream and clears them.
 */
import { ConnectError } from "@connectrpc/connect";
import {
  ConfigView,
  type WatchConfigResponse,
  WatchEventType,
} from "../../../../gen/aether/registry/v1/config_service_pb.js";
import type { ConfigClient } from "../config-client.js";
import { initialLiveState, type LiveFeed } from "./live-feed.js";
import { applyEvents, failed, type LiveReducerState, opening } from "./live-reducer.js";

/** How long a stream may stay silent before it is opened again (3 keep-alives of 15 s). */
export const SILENCE_MS = 45_000;
/** The first retry delay after a failure, in milliseconds. */
export const RETRY_INITIAL_MS = 250;
/** The longest retry delay, in milliseconds. */
export const RETRY_MAX_MS = 10_000;

/** Options of {@link followWatch}; the defaults are the browser's. */
export interface FollowOptions {
  /** The time now in ms (default Date.now). */
  readonly now?: () => number;
  /** A number in [0, 1) for the jitter (default Math.random). */
  readonly random?: () => number;
  /** How long a silent stream is kept (default {@link SILENCE_MS}). */
  readonly silenceMs?: number;
  /** Open the stream only on `start()` (default false: at once). */
  readonly deferred?: boolean;
}

/** A live feed that follows WatchConfig until stopped. */
export interface FollowedFeed extends LiveFeed {
  /** Opens the stream if it is not open yet (idempotent; see `deferred`). */
  start(): void;
  /** Ends the stream and every timer; the state stays as it was. */
  stop(): void;
}

/** The message of a stream failure, as the console shows it. */
function messageOf(error: unknown): string {
  if (error instanceof ConnectError) return error.rawMessage || error.message;
  return error instanceof Error ? error.message : String(error);
}

/** Starts following WatchConfig through `client` (see the module comment). */
export function followWatch(client: ConfigClient, options: FollowOptions = {}): FollowedFeed {
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const silenceMs = options.silenceMs ?? SILENCE_MS;
  const listeners = new Set<() => void>();
  let state: LiveReducerState = {
    live: initialLiveState(now()),
    snapshot: undefined,
    wasDown: false,
  };
  let queue: WatchConfigResponse[] = [];
  const timers = {
    flush: undefined as ReturnType<typeof setTimeout> | undefined,
    silence: undefined as ReturnType<typeof setTimeout> | undefined,
    retry: undefined as ReturnType<typeof setTimeout> | undefined,
  };
  let stream: AbortController | undefined;
  let stopped = false;
  let delayMs = RETRY_INITIAL_MS;

  const publish = (next: LiveReducerState) => {
    const changed = next.live !== state.live;
    state = next;
    if (changed) for (const listener of [...listeners]) listener();
  };
  const flush = () => {
    timers.flush = undefined;
    if (queue.length === 0) return;
    const batch = queue;
    queue = [];
    publish(applyEvents(state, batch, now()));
  };
  const watchSilence = (controller: AbortController) => {
    clearTimeout(timers.silence);
    timers.silence = setTimeout(
      () => controller.abort(new Error(`no event for ${silenceMs / 1000} s`)),
      silenceMs,
    );
  };

  const openOnce = async () => {
    const controller = new AbortController();
    stream = controller;
    publish(opening(state, now()));
    watchSilence(controller);
    const resumeRevision = state.live.synced ? state.live.revision : 0n;
    try {
      const events = client.watchConfig(
        { resumeRevision, view: ConfigView.EFFECTIVE, services: [] },
        { signal: controller.signal },
      );
      for await (const event of events) {
        watchSilence(controller);
        queue.push(event);
        if (event.type === WatchEventType.SYNCED) delayMs = RETRY_INITIAL_MS;
        timers.flush ??= setTimeout(flush, 0);
      }
      throw new Error("the registrar ended the stream");
    } catch (error) {
      clearTimeout(timers.flush);
      flush();
      if (stopped) return;
      const reason = controller.signal.aborted ? controller.signal.reason : error;
      publish(failed(state, messageOf(reason), now()));
    } finally {
      clearTimeout(timers.silence);
    }
  };

  const loop = async () => {
    while (!stopped) {
      await openOnce();
      if (stopped) return;
      const wait = delayMs / 2 + random() * (delayMs / 2);
      delayMs = Math.min(delayMs * 2, RETRY_MAX_MS);
      await new Promise<void>((resolve) => {
        timers.retry = setTimeout(resolve, wait);
      });
    }
  };
  let started = false;
  const start = () => {
    if (started || stopped) return;
    started = true;
    void loop();
  };
  if (options.deferred !== true) start();

  return {
    start,
    current: () => state.live,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    stop() {
      stopped = true;
      stream?.abort();
      for (const timer of Object.values(timers)) clearTimeout(timer);
    },
  };
}
