/**
 * The {@link StatusStore} on etcd, over the same raw pieces as the etcd
 * config store (etcd-connection.ts: requests with a deadline, our own raw
 * watch stream, never etcd3's retrying watcher): one connection of its own
 * (`status`), so status traffic never queues in front of the config
 * cache's reads or health pings.
 */

import { clusterStatusPrefix } from "../../common/status-layout.js";
import { allOriginsKeyPrefix } from "../../common/store-layout.js";
import type { EtcdSecurity } from "../../runtime/etcd-security.js";
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import type { StoreWatch } from "./config-store.js";
import { callHandler, checkWatchRevision } from "./decode-entry.js";
import { prefixEnd } from "./etcd-client.js";
import { createEtcdConnection } from "./etcd-connection.js";
import { openResumingWatch } from "./etcd-resuming-watch.js";
import { DEFAULT_REQUEST_TIMEOUT_MS, DEFAULT_WATCH_PROBE_INTERVAL_MS } from "./etcd-store.js";
import {
  checkStatusWrites,
  createStatusDecoder,
  type StatusEntry,
  type StatusStore,
  type StatusWatchHandler,
  type StatusWrite,
} from "./status-store.js";
import { normalizePrefix } from "./store-key.js";

/** How many keys one range request reads at most. */
const RANGE_BATCH = 1_000;

/** Options of {@link createEtcdStatusStore}. */
export interface EtcdStatusStoreOptions {
  /** The cluster this store writes under. */
  readonly cluster: string;
  /** The etcd client URLs; at least one. */
  readonly endpoints: readonly string[];
  /** The key prefix (normalized here); the config store's. */
  readonly prefix: string;
  /** TLS and authentication towards etcd; default none. */
  readonly security?: EtcdSecurity;
  /** The bound on every request, in milliseconds; default the config store's. */
  readonly requestTimeoutMs?: number;
  /** How often an idle watch is probed, in milliseconds; default the config store's. */
  readonly watchProbeIntervalMs?: number;
  /** Where bad values and watch ends are reported; default silent. */
  readonly logger?: Logger;
}

/** Creates a status store on etcd; nothing connects until the first call. */
export function createEtcdStatusStore(options: EtcdStatusStoreOptions): StatusStore {
  const { cluster } = options;
  const prefix = normalizePrefix(options.prefix);
  const logger = options.logger ?? createSilentLogger();
  const decoder = createStatusDecoder(prefix, logger);
  const connection = createEtcdConnection({
    endpoints: options.endpoints,
    security: options.security,
    prefix,
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    probeIntervalMs: options.watchProbeIntervalMs ?? DEFAULT_WATCH_PROBE_INTERVAL_MS,
    purpose: "status",
  });
  const { client } = connection;

  const list = async (only?: string) => {
    const keyPrefix =
      only === undefined ? allOriginsKeyPrefix(prefix) : clusterStatusPrefix(prefix, only);
    const rangeEnd = prefixEnd(keyPrefix);
    const entries: StatusEntry[] = [];
    let revision: number | undefined;
    let start = Buffer.from(keyPrefix);
    for (;;) {
      const at = revision;
      const response = await connection.call(
        "status range",
        (callOptions) =>
          client.kv.range(
            {
              key: start,
              range_end: rangeEnd,
              limit: RANGE_BATCH,
              ...(at === undefined ? {} : { revision: at }),
            },
            callOptions,
          ),
        at,
      );
      revision ??= Number(response.header.revision);
      for (const kv of response.kvs) {
        const key = kv.key.toString("utf8");
        const entry = decoder.entry({ key, value: kv.value, modRevision: Number(kv.mod_revision) });
        if (entry !== undefined) entries.push(entry);
      }
      const last = response.kvs[response.kvs.length - 1];
      if (!response.more || last === undefined) break;
      start = Buffer.concat([last.key, Buffer.from([0])]);
    }
    return { entries, revision };
  };

  const watch = (afterRevision: number, handler: StatusWatchHandler): StoreWatch => {
    checkWatchRevision(afterRevision);
    // Status keys of every cluster are not one range: the watch covers every
    // origin's subtree and keeps the status keys.
    const stop = openResumingWatch(connection, afterRevision + 1, allOriginsKeyPrefix(prefix), {
      changes: (changes) => {
        const events = decoder.events(changes);
        if (events.length > 0) callHandler(logger, () => handler.onEvents(events));
      },
      error: (error) => {
        logger.warn({ err: error }, "etcd status watch ended");
        callHandler(logger, () => handler.onError(error));
      },
      resumed: (error, fromRevision) =>
        logger.warn({ err: error.message, fromRevision }, "etcd status watch resumed"),
    });
    return { cancel: async () => stop() };
  };

  return {
    kind: "etcd",
    cluster,
    prefix,
    counters: decoder.counters,
    list,
    watch,
    write: async (changes: readonly StatusWrite[]) => {
      checkStatusWrites(prefix, cluster, changes);
      if (changes.length === 0) return connection.currentRevision("status write");
      const success = changes.map((change) =>
        change.type === "put"
          ? { request_put: { key: Buffer.from(change.key), value: Buffer.from(change.value) } }
          : { request_delete_range: { key: Buffer.from(change.key) } },
      );
      const response = await connection.call("status write", (callOptions) =>
        client.kv.txn({ compare: [], success }, callOptions),
      );
      return Number(response.header.revision);
    },
    close: async () => connection.close(),
  };
}
