/**
 * Following the store after a listing: one store watch from the listing's
 * revision, and a ping every interval to notice a connection that hangs
 * without failing (a frozen peer, a partition). It ends with the watch's
 * error or a failed ping's, or without an error when interrupted.
 *
 * A failed ping is judged by ping-verdict.ts: pinged again at once when the
 * event loop was busy for most of its wait (a burst of requests the process
 * is busy with cannot pass for a lost store; see `starvation-grace.ts`),
 * pinged again shortly while the pings have been failing for less than
 * `lossAfterMs` (a cluster electing a new leader answers nothing for a
 * moment), and counted after that.
 */
import { measureLoopBusy } from "../../runtime/loop-busy.js";
import type { ConfigStore, StoreEvent, StoreWatch } from "../store/config-store.js";
import { StoreUnavailableError } from "../store/config-store.js";
import { DEFAULT_STARVATION_GRACE, type StarvationGrace } from "../store/starvation-grace.js";
import { DEFAULT_PING_LOSS_AFTER_MS, judgeFailedPing } from "./ping-verdict.js";

/** The longest wait before a failed ping that is not yet counted is tried again, in milliseconds. */
const PING_RETRY_MS = 250;

/** Options of {@link followStore}. */
export interface FollowOptions {
  /** How often the store is pinged while the watch is quiet or busy alike. */
  readonly pingIntervalMs: number;
  /** Receives the watch's events, in revision order, until the follow ends. */
  readonly onEvents: (events: StoreEvent[]) => void;
  /** Receives the function that ends the follow early (without an error), as soon as it exists. */
  readonly onInterruptible: (interrupt: () => void) => void;
  /** When a failed ping is excused; default {@link DEFAULT_STARVATION_GRACE}. */
  readonly grace?: StarvationGrace;
  /** Measures the event loop over a ping; default {@link measureLoopBusy}. */
  readonly measureBusy?: () => () => number;
  /**
   * How long pings may keep failing before the follow ends with the last
   * failure, in milliseconds; default {@link DEFAULT_PING_LOSS_AFTER_MS}.
   */
  readonly lossAfterMs?: number;
  /** Called with each failed ping that was excused and retried (logging, tests). */
  readonly onExcused?: (error: Error, busy: number) => void;
}

/**
 * Watches `store` from revision `from` and pings it every interval; resolves
 * with why it ended: the watch's error, the error of a ping failure that
 * counted, or undefined when interrupted. The watch and the pinger are
 * released however it ends.
 */
export function followStore(
  store: Pick<ConfigStore, "watch" | "ping">,
  from: number,
  options: FollowOptions,
): Promise<Error | undefined> {
  const measureBusy = options.measureBusy ?? measureLoopBusy;
  return new Promise((resolve) => {
    let done = false;
    let watch: StoreWatch | undefined;
    let pinger: NodeJS.Timeout | undefined;
    let retry: NodeJS.Timeout | undefined;
    const finish = (error: Error | undefined) => {
      if (done) return;
      done = true;
      if (pinger !== undefined) clearInterval(pinger);
      clearTimeout(retry);
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
    /** When the current run of failed pings began; undefined after an answer. */
    let failingSince: number | undefined;
    const lossAfterMs = options.lossAfterMs ?? DEFAULT_PING_LOSS_AFTER_MS;
    /** Pings once; a failed ping is pinged again (at once or shortly) until it counts. */
    const ping = (excused: number): void => {
      pinging = true;
      const busy = measureBusy();
      store.ping().then(
        () => {
          pinging = false;
          failingSince = undefined;
        },
        (caught: unknown) => {
          const error =
            caught instanceof Error ? caught : new StoreUnavailableError(String(caught));
          if (done) return;
          const load = busy();
          failingSince ??= Date.now();
          const failingForMs = Date.now() - failingSince;
          const verdict = judgeFailedPing(
            { busy: load, excused, failingForMs },
            lossAfterMs,
            options.grace ?? DEFAULT_STARVATION_GRACE,
          );
          if (verdict === "excuse") {
            options.onExcused?.(error, load);
            ping(excused + 1);
          } else if (verdict === "retry") {
            retry = setTimeout(() => ping(0), Math.min(PING_RETRY_MS, options.pingIntervalMs));
          } else {
            pinging = false;
            finish(error);
          }
        },
      );
    };
    pinger = setInterval(() => {
      if (!pinging && !done) ping(0);
    }, options.pingIntervalMs);
    pinger.unref?.();
  });
}
