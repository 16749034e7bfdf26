/**
 * How the agent hands route tables to in-process consumers: listeners
 * called with every new table, and async iterators that start from the
 * current table and skip to the latest one when their consumer is slow.
 */
import type { RouteTable } from "../../services/common/route-merge.js";
import type { Logger } from "../../services/runtime/logger.js";

/** Options of {@link createTableBroadcast}. */
export interface TableBroadcastOptions {
  /** Where a listener's exception is logged. */
  readonly logger: Logger;
  /** The current table (what a new iterator yields first); undefined before the first. */
  current(): RouteTable | undefined;
  /** True once the owner is stopping: iterators end when they have nothing left to yield. */
  closed(): boolean;
}

/** The listeners and iterators of route tables. */
export interface TableBroadcast {
  /**
   * Registers a listener called with every published table; returns a
   * function that unregisters it.
   */
  onUpdate(listener: (table: RouteTable) => void): () => void;
  /**
   * Iterates over tables: the current one first (when there is one), then
   * every published one, skipping to the latest when the consumer is slow.
   * Ends once `closed()` holds and nothing is pending, or when `signal` aborts.
   */
  updates(options?: { signal?: AbortSignal }): AsyncGenerator<RouteTable, void, undefined>;
  /**
   * Hands `table` to every listener (one that throws is logged and does not
   * stop the others), then wakes every iterator.
   */
  publish(table: RouteTable): void;
  /** Drops every listener and wakes every iterator (to end it once `closed()` holds). */
  close(): void;
}

/** Creates a broadcast with no listener. */
export function createTableBroadcast(options: TableBroadcastOptions): TableBroadcast {
  const { logger } = options;
  const listeners = new Set<(table: RouteTable) => void>();
  const wakers = new Set<() => void>();

  const onUpdate = (listener: (table: RouteTable) => void): (() => void) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  };

  async function* updates(
    iteratorOptions: { signal?: AbortSignal } = {},
  ): AsyncGenerator<RouteTable, void, undefined> {
    const { signal } = iteratorOptions;
    let pending = options.current();
    let wake: (() => void) | undefined;
    const waker = () => wake?.();
    const off = onUpdate((next) => {
      pending = next;
    });
    wakers.add(waker);
    signal?.addEventListener("abort", waker);
    try {
      for (;;) {
        if (pending !== undefined) {
          const next = pending;
          pending = undefined;
          yield next;
          continue;
        }
        if (options.closed() || signal?.aborted === true) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    } finally {
      off();
      wakers.delete(waker);
      signal?.removeEventListener("abort", waker);
    }
  }

  return {
    onUpdate,
    updates,
    publish(table) {
      for (const listener of [...listeners]) {
        try {
          listener(table);
        } catch (error) {
          logger.error({ err: error }, "a route table listener threw");
        }
      }
      for (const wake of [...wakers]) wake();
    },
    close() {
      listeners.clear();
      for (const wake of [...wakers]) wake();
    },
  };
}
