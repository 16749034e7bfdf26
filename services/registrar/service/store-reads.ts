/**
 * The store reads made on behalf of list requests, coalesced and limited.
 * Identical reads in flight are made once (single-flight, keyed by
 * `read-key.ts`): whoever asks the same question while it is being answered
 * shares the answer. Distinct reads go through a small semaphore with a
 * bounded line (`read-admission.ts`): at most `concurrency` run, at most
 * `queue` wait, each for at most `waitMs`; any other is refused at once with
 * a {@link ListReadsBusyError}, which the ConfigService turns into
 * UNAVAILABLE with retry advice. So a burst of requests costs the store a
 * bounded number of reads at a time, and a request that cannot be served
 * soon is told so quickly instead of piling up on the store.
 */
import type { ConfigStore, ListOptions, ListResult } from "../store/config-store.js";
import { type Admission, admitRead, type ReadLimits } from "./read-admission.js";
import { storeReadKey } from "./read-key.js";

/** How long a refused caller is advised to wait before trying again, in milliseconds. */
export const RETRY_AFTER_MS = 1_000;

/** A list read refused because too many are running and waiting; nothing was read. */
export class ListReadsBusyError extends Error {
  override readonly name = "ListReadsBusyError";
  /** How long the caller should wait before trying again, in milliseconds. */
  readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number) {
    super(message);
    this.retryAfterMs = retryAfterMs;
  }
}

/** What became of a read asked of {@link StoreReads.list}, for metrics. */
export type ReadOutcome = "read" | "coalesced" | "refused";

/** Options of {@link createStoreReads}. */
export interface StoreReadsOptions {
  /** The store read. */
  readonly store: Pick<ConfigStore, "list">;
  /** How many reads run and wait at most. */
  readonly limits: ReadLimits;
  /** How long a read may wait for a slot before it is refused, in milliseconds. */
  readonly waitMs: number;
  /** Called once for every read asked: made, joined to one in flight, or refused. */
  readonly onOutcome?: (outcome: ReadOutcome) => void;
}

/** Coalesced, limited store reads; see {@link createStoreReads}. */
export interface StoreReads {
  /**
   * Lists the store with `options`, sharing the answer of an identical read
   * in flight. Rejects with {@link ListReadsBusyError} when the read can
   * neither run nor wait (or waited `waitMs` in vain), and with the store's
   * errors otherwise.
   */
  list(options: ListOptions): Promise<ListResult>;
  /** Reads running now. */
  readonly running: number;
  /** Reads waiting for a slot now. */
  readonly waiting: number;
}

/** A read waiting for a slot: started (with its slot taken) or refused by its timer. */
interface Waiter {
  readonly start: () => void;
  readonly timer: NodeJS.Timeout;
}

/** Creates the coalesced, limited reads of one store. */
export function createStoreReads(options: StoreReadsOptions): StoreReads {
  const { store, limits, waitMs } = options;
  const flights = new Map<string, Promise<ListResult>>();
  const line: Waiter[] = [];
  let running = 0;

  const busy = (why: string): ListReadsBusyError =>
    new ListReadsBusyError(
      `the registrar is serving too many listings from the store (${why}); retry after ${RETRY_AFTER_MS / 1000}s`,
      RETRY_AFTER_MS,
    );

  /** Takes a slot: at once when `admission` is "run", else when one is handed over in line. */
  const acquire = (admission: Exclude<Admission, "refuse">): Promise<void> => {
    if (admission === "run") {
      running++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        start: resolve,
        timer: setTimeout(() => {
          line.splice(line.indexOf(waiter), 1);
          options.onOutcome?.("refused");
          reject(busy(`waited ${waitMs} ms for one of ${limits.concurrency} reads`));
        }, waitMs),
      };
      line.push(waiter);
    });
  };

  /** Gives a slot back, handing it to the first read in line (taken for it, so none overtakes). */
  const release = (): void => {
    running--;
    const next = line.shift();
    if (next === undefined) return;
    clearTimeout(next.timer);
    running++;
    next.start();
  };

  const read = async (admission: Exclude<Admission, "refuse">, listOptions: ListOptions) => {
    await acquire(admission);
    options.onOutcome?.("read");
    try {
      return await store.list(listOptions);
    } finally {
      release();
    }
  };

  return {
    list(listOptions) {
      const key = storeReadKey(listOptions);
      const flight = flights.get(key);
      if (flight !== undefined) {
        options.onOutcome?.("coalesced");
        return flight;
      }
      const admission = admitRead({ running, waiting: line.length }, limits);
      if (admission === "refuse") {
        options.onOutcome?.("refused");
        return Promise.reject(busy(`${running} running, ${line.length} waiting`));
      }
      const promise = read(admission, listOptions);
      flights.set(key, promise);
      const forget = () => {
        if (flights.get(key) === promise) flights.delete(key);
      };
      promise.then(forget, forget);
      return promise;
    },
    get running() {
      return running;
    },
    get waiting() {
      return line.length;
    },
  };
}
