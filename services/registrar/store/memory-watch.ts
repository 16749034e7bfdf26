/**
 * A watch of a memory backend (memory-backend.ts), as both embedded stores
 * open it (the config store, memory-store.ts, and the status store,
 * status-store-memory.ts): the changes after a revision replayed from the
 * backend's history, then every new one, batched per microtask, decoded by
 * the store and delivered asynchronously, never inside the call or a write.
 * A closed store or a compacted revision ends the watch with an error.
 */
import type { Logger } from "../../runtime/logger.js";
import { StoreCompactedError, type StoreWatch } from "./config-store.js";
import { callHandler, checkWatchRevision, type RawChange } from "./decode-entry.js";
import type { MemoryBackend } from "./memory-backend.js";

/** What {@link openMemoryWatch} watches and whom it tells. */
export interface MemoryWatchOptions<E> {
  /** The shared data. */
  readonly backend: MemoryBackend;
  /** Changes strictly after this revision are delivered; a non-negative integer. */
  readonly afterRevision: number;
  /** The store's open watches: the watch adds its stop and removes it when it ends. */
  readonly watches: Set<() => void>;
  /** Why no watch can start (the store is closed); undefined while it is open. */
  readonly closed: Error | undefined;
  /** Decodes a batch of raw changes into the events to deliver (none: nothing delivered). */
  decode(changes: RawChange[]): E[];
  /** The store's handler. */
  readonly handler: { onEvents(events: E[]): void; onError(error: Error): void };
  /** Where a handler that throws is logged. */
  readonly logger: Logger;
}

/** Opens a watch (see the module comment). Throws a RangeError for a bad `afterRevision`. */
export function openMemoryWatch<E>(options: MemoryWatchOptions<E>): StoreWatch {
  const { backend, afterRevision, watches, handler, logger } = options;
  checkWatchRevision(afterRevision);
  let active = true;
  let queue: RawChange[] = [];
  let scheduled = false;
  let unsubscribe = (): void => {};

  const stop = (): void => {
    active = false;
    unsubscribe();
    watches.delete(stop);
  };
  const fail = (error: Error): void => {
    stop();
    queueMicrotask(() => callHandler(logger, () => handler.onError(error)));
  };
  const flush = (): void => {
    scheduled = false;
    if (!active) return;
    const changes = queue;
    queue = [];
    const events = options.decode(changes);
    if (events.length > 0) callHandler(logger, () => handler.onEvents(events));
  };
  const enqueue = (changes: readonly RawChange[]): void => {
    queue.push(...changes);
    if (scheduled || queue.length === 0) return;
    scheduled = true;
    queueMicrotask(flush);
  };

  watches.add(stop);
  if (options.closed !== undefined) {
    fail(options.closed);
  } else if (afterRevision < backend.compactRevision - 1) {
    const oldest = backend.compactRevision;
    fail(
      new StoreCompactedError(
        `revision ${afterRevision + 1} has been compacted (oldest readable: ${oldest})`,
        oldest,
      ),
    );
  } else {
    enqueue(backend.changesAfter(afterRevision));
    unsubscribe = backend.subscribe((change) => enqueue([change]));
  }
  return { cancel: async () => stop() };
}
