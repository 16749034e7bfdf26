/**
 * The config cache's subscribers (one per watch stream) and the fan-out of
 * each batch of change records to them: every subscriber gets the events of
 * its view and services, synchronously, in revision order. A subscriber
 * whose callback throws is closed (logged, and told through its `onClose`),
 * never the cache.
 */
import type { Logger } from "../../runtime/logger.js";
import { type EventFilter, eventsFor } from "./change-log.js";
import type { CacheEvent, ChangeRecord } from "./projection-index.js";

/** Why a subscriber was closed: its own `onEvents` threw (the cause). */
export class SubscriberFailedError extends Error {
  override readonly name = "SubscriberFailedError";
  constructor(cause: unknown) {
    super(
      `the watch subscriber failed: ${cause instanceof Error ? cause.message : String(cause)}`,
      {
        cause,
      },
    );
  }
}

/** What a subscriber is fed: its filter, its events, and why it was closed. */
export interface SubscriberOptions extends EventFilter {
  /** Receives every later matching change, synchronously, in revision order. */
  readonly onEvents: (events: CacheEvent[]) => void;
  /**
   * Called once when the subscriber is closed with an error (its own
   * `onEvents` threw: a {@link SubscriberFailedError}); it is then over.
   */
  readonly onClose: (error: Error) => void;
}

/** The live subscribers; see {@link createSubscribers}. */
export interface Subscribers {
  /** Adds a subscriber; returns the function that removes it (idempotent). */
  add(options: SubscriberOptions): () => void;
  /** Feeds `records` to every subscriber whose filter matches some of them. */
  publish(records: readonly ChangeRecord[]): void;
  /** Removes every subscriber, calling `onClose(error)` on each when `error` is given. */
  closeAll(error: Error | undefined): void;
  /** How many subscribers there are. */
  readonly size: number;
}

interface Subscriber {
  readonly options: SubscriberOptions;
  active: boolean;
}

/** Creates an empty set of subscribers; failures of their callbacks go to `logger`. */
export function createSubscribers(logger: Logger): Subscribers {
  const subscribers = new Set<Subscriber>();
  return {
    add(options) {
      const sub: Subscriber = { options, active: true };
      subscribers.add(sub);
      return () => {
        sub.active = false;
        subscribers.delete(sub);
      };
    },
    publish(records) {
      for (const sub of subscribers) {
        if (!sub.active) continue;
        const events = eventsFor(records, sub.options);
        if (events.length === 0) continue;
        try {
          sub.options.onEvents(events);
        } catch (error) {
          logger.error({ err: error }, "watch subscriber failed; closing it");
          sub.active = false;
          subscribers.delete(sub);
          try {
            sub.options.onClose(new SubscriberFailedError(error));
          } catch (closing) {
            logger.error({ err: closing }, "closing a failed watch subscriber failed too");
          }
        }
      }
    },
    closeAll(error) {
      const closing = [...subscribers];
      subscribers.clear();
      for (const sub of closing) {
        if (!sub.active) continue;
        sub.active = false;
        if (error !== undefined) sub.options.onClose(error);
      }
    },
    get size() {
      return subscribers.size;
    },
  };
}
