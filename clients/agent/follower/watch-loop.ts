/**
 * The follower's reconnect loop, an I/O shell: one WatchConfig stream after
 * another, each followed through a {@link WatchSession} (the pure protocol
 * reducer) whose effects change the imported state, with a backoff wait
 * between them that a successful poll may cut short. What the loop goes
 * through (synced, down, retrying) is reported to the follow mode, which
 * decides about the fallback poller and the backoff.
 */
import type { Client } from "@connectrpc/connect";
import {
  type ConfigService,
  WatchEventType,
} from "../../../gen/aether/registry/v1/config_service_pb.js";
import type { Backoff } from "../../../services/runtime/backoff.js";
import type { Logger } from "../../../services/runtime/logger.js";
import { wakeableSleep } from "../../../services/runtime/sleep.js";
import type { ImportOperation, StreamEventType } from "../agent-metrics.js";
import type { FollowEvent, FollowTransition } from "./follow-mode.js";
import type { ImportedState } from "./imported-state.js";
import { ProtocolError } from "./protocol-error.js";
import { openSession, resumeRevision, step, type WatchSession } from "./watch-session.js";
import { runWatchStream } from "./watch-stream.js";

const EVENT_LABELS: Record<number, StreamEventType> = {
  [WatchEventType.SNAPSHOT]: "snapshot",
  [WatchEventType.SYNCED]: "synced",
  [WatchEventType.UPSERT]: "upsert",
  [WatchEventType.DELETE]: "delete",
  [WatchEventType.KEEPALIVE]: "keepalive",
};

/** Options of {@link createWatchLoop}. */
export interface WatchLoopOptions {
  /** The generated client (only `watchConfig` is used). */
  readonly client: Pick<Client<typeof ConfigService>, "watchConfig">;
  /** The state the streams change; its dependency set is what is watched. */
  readonly imported: ImportedState;
  /** How long a stream may stay silent before it counts as dead, in milliseconds. */
  readonly keepaliveTimeoutMs: number;
  /** The reconnect delays. */
  readonly backoff: Backoff;
  /** Logger. */
  readonly logger: Logger;
  /** Steps the follow mode with `stream-synced`, `stream-down` and `retry`. */
  follow(event: FollowEvent): FollowTransition;
  /** Called with each received event's type. */
  onStreamEvent?(type: StreamEventType): void;
  /** Called when a stream ended or failed and will be re-established. */
  onReconnect?(): void;
  /** Called with each failed stream's error (operation `watch`). */
  onError?(operation: ImportOperation, error: Error): void;
  /** Called when a stream went silent past the keep-alive timeout. */
  onDeadConnection?(): void;
  /**
   * Called with what each SYNCED and KEEPALIVE says of the registrar's store
   * (`store_unavailable`: it serves the view it kept through a store loss),
   * and with false when a stream ends (nothing is known of the next one yet).
   */
  onRegistrarStore?(unavailable: boolean): void;
}

/** A reconnect loop; see the module comment. */
export interface WatchLoop {
  /** Streams until `signal` aborts; never rejects on a failed stream. */
  run(signal: AbortSignal): Promise<void>;
  /** Ends the current wait before reconnecting, if any, now. */
  wake(): void;
}

/** Creates a reconnect loop; nothing runs until `run`. */
export function createWatchLoop(options: WatchLoopOptions): WatchLoop {
  const { imported, logger } = options;
  /** Consecutive stream failures, so that a long outage logs once at warn, then at debug. */
  let failures = 0;
  let wakeReconnect: (() => void) | undefined;

  const onSynced = (resumed: boolean) => {
    const { effects } = options.follow({ type: "stream-synced" });
    const wasPolling = effects.some((effect) => effect.type === "stop-poller");
    const fields = {
      revision: String(imported.resumePoint),
      resumed,
      services: imported.services.length,
      failures,
    };
    if (wasPolling || failures > 0) logger.info(fields, "stream is back; polling stopped");
    else logger.debug(fields, "stream synced");
    failures = 0;
  };

  /** Runs one stream; `synced` tells whether it reached SYNCED. */
  const streamOnce = async (signal: AbortSignal) => {
    const services = imported.services;
    const resume = imported.snapshotWanted
      ? 0n
      : resumeRevision(imported.state, services, imported.resumePoint);
    // Typed as the union: the callback below moves it to "live".
    let session = openSession(resume) as WatchSession;
    const error = await runWatchStream({
      client: options.client,
      services,
      resume,
      keepaliveTimeoutMs: options.keepaliveTimeoutMs,
      signal,
      onEvent: (event) => {
        options.onStreamEvent?.(EVENT_LABELS[event.type] ?? "unknown");
        const next = step(session, event, imported.resumePoint);
        const marker =
          event.type === WatchEventType.KEEPALIVE || event.type === WatchEventType.SYNCED;
        if (marker) options.onRegistrarStore?.(event.storeUnavailable);
        const quiet = event.type === WatchEventType.KEEPALIVE && next.effects.length === 0;
        // A keep-alive on a live stream confirms the state: held projections may run out.
        // Not one from a registrar without its store: its view may be old.
        if (quiet && next.session.phase === "live" && !event.storeUnavailable) {
          imported.confirmed();
        }
        for (const effect of next.effects) {
          if (effect.type === "synced") {
            imported.synced(effect.resumed, effect.revision, effect.changes);
            onSynced(effect.resumed);
          } else if (effect.type === "change") imported.change(effect.revision, effect.change);
          else if (effect.type === "advance") imported.advance(effect.revision);
          else throw new ProtocolError(effect.message);
        }
        session = next.session;
      },
      onSilent: () => options.onDeadConnection?.(),
    });
    return { synced: session.phase === "live", error };
  };

  return {
    async run(signal) {
      while (!signal.aborted) {
        const outcome = await streamOnce(signal);
        options.onRegistrarStore?.(false);
        if (signal.aborted) return;
        options.onReconnect?.();
        if (outcome.error !== undefined) {
          options.onError?.("watch", outcome.error);
          failures++;
          logger[failures === 1 ? "warn" : "debug"](
            { err: outcome.error.message, synced: outcome.synced, failures },
            "stream failed; keeping the last-known config",
          );
        } else {
          logger.info({ synced: outcome.synced }, "stream ended by the registrar; reconnecting");
        }
        if (!signal.aborted) options.follow({ type: "stream-down" });
        const sleep = wakeableSleep(options.backoff.next(), signal);
        wakeReconnect = sleep.wake;
        await sleep.done;
        wakeReconnect = undefined;
        options.follow({ type: "retry" });
      }
    },
    wake() {
      wakeReconnect?.();
    },
  };
}
