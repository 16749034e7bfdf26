/**
 * Following the store after a listing: one store watch from the listing's
 * revision, and a ping every interval to notice a connection that hangs
 * without failing (a frozen peer, a partition). It ends with the watch's
 * error or the first failed ping, or without an error when interrupted.
 */
import type { ConfigStore, StoreEvent, StoreWatch } from "../store/config-store.js";
import { StoreUnavailableError } from "../store/config-store.js";

/** Options of {@link followStore}. */
export interface FollowOptions {
  /** How often the store is pinged while the watch is quiet or busy alike. */
  readonly pingIntervalMs: number;
  /** Receives the watch's events, in revision order, until the follow ends. */
  readonly onEvents: (events: StoreEvent[]) => void;
  /** Receives the function that ends the follow early (without an error), as soon as it exists. */
  readonly onInterruptible: (interrupt: () => void) => void;
}

/**
 * Watches `store` from revision `from` and pings it every interval; resolves
 * with why it ended: the watch's error, the failed ping's error, or undefined
 * when interrupted. The watch and the pinger are released however it ends.
 */
export function followStore(
  store: Pick<ConfigStore, "watch" | "ping">,
  from: number,
  options: FollowOptions,
): Promise<Error | undefined> {
  return new Promise((resolve) => {
    let done = false;
    let watch: StoreWatch | undefined;
    let pinger: NodeJS.Timeout | undefined;
    const finish = (error: Error | undefined) => {
      if (done) return;
      done = true;
      if (pinger !== undefined) clearInterval(pinger);
      void watch?.cancel().catch(() => undefined);
      resolve(error);
    };
    options.onInterruptible(() => finish(undefined));
    watch = store.watch(from, {
      onEvents: (events) => {
        if (!done) options.onEvents(events);
      },
      onError: (error) => finish(error),
    });
    if (done) {
      // The watch failed before it returned: release it, and start no pinger.
      void watch.cancel().catch(() => undefined);
      return;
    }
    let pinging = false;
    pinger = setInterval(() => {
      if (pinging || done) return;
      pinging = true;
      store.ping().then(
        () => {
          pinging = false;
        },
        (error: unknown) => {
          pinging = false;
          finish(error instanceof Error ? error : new StoreUnavailableError(String(error)));
        },
      );
    }, options.pingIntervalMs);
    pinger.unref?.();
  });
}
