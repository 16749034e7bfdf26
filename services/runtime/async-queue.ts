/**
 * A single-consumer async queue: producers push synchronously, one consumer
 * awaits items. It ends when closed (after draining what was pushed) or fails
 * with an error, and it bounds its backlog so that a consumer that stops
 * reading cannot make the producer hold unbounded memory.
 */

/** The queue's backlog limit was exceeded. */
export class QueueOverflowError extends Error {
  override readonly name = "QueueOverflowError";
}

/** See {@link createAsyncQueue}. */
export interface AsyncQueue<T> extends AsyncIterable<T> {
  /** Appends items; fails the queue with {@link QueueOverflowError} past the limit. */
  push(...items: T[]): void;
  /** Ends the queue after the items already pushed. */
  close(): void;
  /** Fails the queue: the consumer gets `error` after the items already pushed. */
  fail(error: Error): void;
  /** The number of items waiting. */
  readonly size: number;
}

/** Creates a queue that holds at most `limit` unread items. */
export function createAsyncQueue<T>(limit: number): AsyncQueue<T> {
  let items: T[] = [];
  let head = 0;
  let ended = false;
  let failure: Error | undefined;
  let waiter: (() => void) | undefined;

  const notify = () => {
    const w = waiter;
    waiter = undefined;
    w?.();
  };

  return {
    push(...pushed: T[]) {
      if (ended) return;
      items.push(...pushed);
      if (items.length - head > limit) {
        failure = new QueueOverflowError(`more than ${limit} items waiting`);
        ended = true;
        items = [];
        head = 0;
      }
      notify();
    },
    close() {
      ended = true;
      notify();
    },
    fail(error: Error) {
      if (ended) return;
      failure = error;
      ended = true;
      notify();
    },
    get size() {
      return items.length - head;
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (head < items.length) {
          const item = items[head] as T;
          head++;
          if (head > 1024 && head * 2 > items.length) {
            items = items.slice(head);
            head = 0;
          }
          yield item;
          continue;
        }
        if (ended) {
          if (failure !== undefined) throw failure;
          return;
        }
        await new Promise<void>((resolve) => {
          waiter = resolve;
        });
      }
    },
  };
}
