/**
 * The identity of a store read, for coalescing (`store-reads.ts`): two reads
 * with the same key ask the store the same question (the same origin,
 * services, revision, start position and limit), so while one is in flight
 * another can share its answer instead of asking again. A set of services is
 * keyed in sorted order, and an empty set like none (both mean every
 * service). A read at the latest revision (no revision) is keyed as such:
 * one that joins it gets the answer of a read that started a moment before
 * it arrived, as fresh as any listing served from the config cache.
 * Synchronous and free of I/O.
 */
import type { ListOptions } from "../store/config-store.js";

/** Returns the coalescing key of a store read with `options` (see the module comment). */
export function storeReadKey(options: ListOptions): string {
  const services =
    options.services === undefined || options.services.size === 0
      ? null
      : [...options.services].sort();
  return JSON.stringify([
    options.origin ?? null,
    services,
    options.revision ?? null,
    options.after === undefined ? null : [options.after.origin, options.after.service],
    options.limit ?? null,
  ]);
}
