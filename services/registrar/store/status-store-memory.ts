/**
 * The {@link StatusStore} over a {@link MemoryBackend}: the embedded store's
 * data, shared with the config stores of the same process (the sandbox's
 * registrars share one backend, as registrars share one etcd). Watches run
 * their callbacks in a microtask, never inside a write.
 */
import { clusterStatusPrefix } from "../../common/status-layout.js";
import { allOriginsKeyPrefix } from "../../common/store-layout.js";
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import { StoreUnavailableError, type StoreWatch } from "./config-store.js";
import type { MemoryBackend } from "./memory-backend.js";
import { openMemoryWatch } from "./memory-watch.js";
import {
  checkStatusWrites,
  createStatusDecoder,
  type StatusEntry,
  type StatusStore,
  type StatusWatchHandler,
  type StatusWrite,
} from "./status-store.js";
import { normalizePrefix } from "./store-key.js";

/** Options of {@link createMemoryStatusStore}. */
export interface MemoryStatusStoreOptions {
  /** The shared data (a memory config store's `backend`). */
  readonly backend: MemoryBackend;
  /** The cluster this store writes under. */
  readonly cluster: string;
  /** The key prefix (normalized here); the config store's. */
  readonly prefix: string;
  /** Where bad values are reported; default silent. */
  readonly logger?: Logger;
}

/** Creates a status store over a memory backend; see {@link StatusStore}. */
export function createMemoryStatusStore(options: MemoryStatusStoreOptions): StatusStore {
  const { backend, cluster } = options;
  const prefix = normalizePrefix(options.prefix);
  const logger = options.logger ?? createSilentLogger();
  const decoder = createStatusDecoder(prefix, logger);
  const watches = new Set<() => void>();
  let closed = false;
  const checkOpen = (): void => {
    if (closed) throw new StoreUnavailableError("the memory status store is closed");
  };

  const list = async (only?: string) => {
    checkOpen();
    const revision = backend.revision;
    const keyPrefix =
      only === undefined ? allOriginsKeyPrefix(prefix) : clusterStatusPrefix(prefix, only);
    const entries: StatusEntry[] = [];
    for (const raw of backend.entriesAt(revision, keyPrefix, keyPrefix, false)) {
      const entry = decoder.entry(raw);
      if (entry !== undefined) entries.push(entry);
    }
    return { entries, revision };
  };

  const watch = (afterRevision: number, handler: StatusWatchHandler): StoreWatch =>
    openMemoryWatch({
      backend,
      afterRevision,
      watches,
      closed: closed ? new StoreUnavailableError("the memory status store is closed") : undefined,
      decode: (changes) => decoder.events(changes),
      handler,
      logger,
    });

  return {
    kind: "memory",
    cluster,
    prefix,
    counters: decoder.counters,
    list,
    watch,
    write: async (changes: readonly StatusWrite[]) => {
      checkOpen();
      checkStatusWrites(prefix, cluster, changes);
      const raw = changes.map((change) => ({
        key: change.key,
        value: change.type === "put" ? change.value : undefined,
      }));
      return backend.write(raw) ?? backend.revision;
    },
    close: async () => {
      closed = true;
      for (const stop of [...watches]) stop();
    },
  };
}
