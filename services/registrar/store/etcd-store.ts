/**
 * The production {@link ConfigStore}: projections in etcd v3, one key per
 * origin and service (see store-key.ts), the value the protobuf binary
 * encoding of the projection.
 *
 * It uses the `etcd3` client for its connection handling only: every call goes
 * through the low-level KV client with a deadline, and every watch is its own
 * raw gRPC watch stream. etcd3's own fault handling (a retry policy, a circuit
 * breaker that refuses calls for five seconds, watchers that reconnect
 * forever) is replaced by failing fast: an unreachable or frozen etcd makes a
 * call reject with {@link StoreUnavailableError} within the request timeout and
 * a watch end with one `onError`, and the next call tries again, so the
 * registrar recovers by itself when etcd is back.
 *
 * This file holds the reads and watches; the pieces live next to it: the raw
 * client and calls in etcd-client.ts, the raw watch stream in etcd-watch.ts,
 * the store's guarded connection in etcd-connection.ts and the (fenced)
 * writes in etcd-writes.ts. The raw pieces are re-exported from here too,
 * so imports from this file keep working.
 */

import { type EtcdSecurity, etcdUserOf } from "../../runtime/etcd-security.js";
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import type {
  ConfigStore,
  ListOptions,
  ListResult,
  ProjectionFilter,
  StoreUnavailableError,
  StoreWatch,
  WatchHandler,
} from "./config-store.js";
import {
  callHandler,
  checkListOptions,
  checkWatchRevision,
  createEntryDecoder,
  createPageCollector,
  type EntryDecoder,
  listRange,
} from "./decode-entry.js";
import { checkEtcdAccess } from "./etcd-access-check.js";
import { prefixEnd } from "./etcd-client.js";
import { createEtcdConnection, type EtcdConnection } from "./etcd-connection.js";
import { openResumingWatch } from "./etcd-resuming-watch.js";
import { createEtcdWrites } from "./etcd-writes.js";
import {
  allOriginsKeyPrefix,
  DEFAULT_STORE_PREFIX,
  normalizePrefix,
  originKeyPrefix,
} from "./store-key.js";

export {
  callEtcd,
  closeStream,
  createEtcdClient,
  prefixEnd,
  translateEtcdError,
} from "./etcd-client.js";
export { type EtcdWatchSink, type EtcdWatchSpec, openEtcdWatch } from "./etcd-watch.js";

/** The default bound on every etcd request, in milliseconds. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 2_000;

/**
 * The default interval between liveness probes of a watch stream, in
 * milliseconds: short, so that a stream on a member that went silent is
 * noticed (and resumed on another member) within a probe and a request
 * timeout; a progress request is one small message on an open stream.
 */
export const DEFAULT_WATCH_PROBE_INTERVAL_MS = 1_000;

/** How many keys one range request reads at most. */
const RANGE_BATCH = 1_000;

/** Options of {@link createEtcdStore}. */
export interface EtcdStoreOptions {
  /** The origin (cluster name) this store writes under. */
  readonly origin: string;
  /** The etcd client URLs, for example `["http://127.0.0.1:2379"]`; at least one. */
  readonly endpoints: readonly string[];
  /** The key prefix; default `/aether/v1`. */
  readonly prefix?: string;
  /** Where skipped keys and values and connection trouble are reported; default silent. */
  readonly logger?: Logger;
  /**
   * The bound on every request (and on starting a watch), in milliseconds;
   * default {@link DEFAULT_REQUEST_TIMEOUT_MS}.
   */
  readonly requestTimeoutMs?: number;
  /**
   * How often an idle watch asks etcd for a progress report to notice a frozen
   * connection (no answer within the request timeout ends the watch with
   * {@link StoreUnavailableError}), in milliseconds; default
   * {@link DEFAULT_WATCH_PROBE_INTERVAL_MS}.
   */
  readonly watchProbeIntervalMs?: number;
  /** TLS and authentication towards etcd (see etcd-security.ts); default none. */
  readonly security?: EtcdSecurity;
}

/**
 * Creates a store backed by etcd, over two connections: one for lists,
 * revisions and writes, the other for watches and pings, so that the
 * store's health (which the config cache judges by its watch and its pings)
 * is never measured behind a queue of reads. Nothing connects until the first call; a
 * call made while etcd is unreachable rejects with
 * {@link StoreUnavailableError} and the next one tries again. Nothing the
 * store does can raise an unhandled rejection or an unhandled `error` event.
 */
export function createEtcdStore(options: EtcdStoreOptions): ConfigStore {
  if (options.endpoints.length === 0) throw new TypeError("at least one etcd endpoint is needed");
  const origin = options.origin;
  const prefix = normalizePrefix(options.prefix ?? DEFAULT_STORE_PREFIX);
  const logger = options.logger ?? createSilentLogger();
  const decoder = createEntryDecoder({ prefix, logger });
  const connectionOptions = {
    endpoints: options.endpoints,
    security: options.security,
    prefix,
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    probeIntervalMs: options.watchProbeIntervalMs ?? DEFAULT_WATCH_PROBE_INTERVAL_MS,
  };
  // Lists, revisions and writes on one connection; watches and pings (what
  // the config cache judges the store's health by) on another, so that no
  // amount of reads waiting on the first can delay an answer on the second.
  const connection = createEtcdConnection({ ...connectionOptions, purpose: "store" });
  const follow = createEtcdConnection({ ...connectionOptions, purpose: "store-follow" });

  const watch = (
    afterRevision: number,
    handler: WatchHandler,
    filter: ProjectionFilter = {},
  ): StoreWatch => {
    checkWatchRevision(afterRevision);
    const keyPrefix =
      filter.origin === undefined
        ? allOriginsKeyPrefix(prefix)
        : originKeyPrefix(prefix, filter.origin);
    const stop = openResumingWatch(follow, afterRevision + 1, keyPrefix, {
      changes: (changes) => {
        const events = decoder.decodeChanges(changes, filter);
        if (events.length > 0) callHandler(logger, () => handler.onEvents(events));
      },
      error: (error) => {
        logger.warn({ err: error, keyPrefix }, "etcd watch ended");
        callHandler(logger, () => handler.onError(error));
      },
      resumed: (error, fromRevision) => {
        logger.warn(
          { err: error.message, keyPrefix, fromRevision },
          "etcd watch stream failed; resumed on another member",
        );
      },
    });
    return { cancel: async () => stop() };
  };

  return {
    kind: "etcd",
    origin,
    prefix,
    counters: decoder.counters,
    list: (listOptions?: ListOptions) => listEtcd(connection, prefix, decoder, listOptions),
    revision: () => connection.currentRevision("revision"),
    ...createEtcdWrites({ connection, prefix, origin, decoder }),
    watch,
    ping: async () => {
      await follow.currentRevision("ping");
    },
    checkAccess: ({ write }) =>
      checkEtcdAccess({ connection, prefix, origin, user: etcdUserOf(options.security) }, write),
    close: async () => {
      connection.close();
      follow.close();
    },
  };
}

/**
 * Lists projections consistently at one revision (the listing's, or the
 * revision of the first range read), in range reads of at most
 * {@link RANGE_BATCH} keys: the {@link ConfigStore} `list`.
 */
async function listEtcd(
  connection: EtcdConnection,
  prefix: string,
  decoder: EntryDecoder,
  listOptions: ListOptions = {},
): Promise<ListResult> {
  checkListOptions(listOptions);
  const range = listRange(prefix, listOptions);
  const rangeEnd = prefixEnd(range.keyPrefix);
  const page = createPageCollector(decoder, listOptions, listOptions.limit);
  const batch =
    listOptions.limit === undefined ? RANGE_BATCH : Math.min(listOptions.limit + 1, RANGE_BATCH);
  let revision = listOptions.revision;
  let start = range.startExclusive
    ? Buffer.concat([Buffer.from(range.startKey), ZERO])
    : Buffer.from(range.startKey);
  for (;;) {
    const at = revision;
    const response = await connection.call(
      "range",
      (callOptions) =>
        connection.client.kv.range(
          {
            key: start,
            range_end: rangeEnd,
            limit: batch,
            ...(at === undefined ? {} : { revision: at }),
          },
          callOptions,
        ),
      at,
    );
    revision ??= Number(response.header.revision);
    let wanted = true;
    for (const kv of response.kvs) {
      wanted = page.offer({
        key: kv.key.toString("utf8"),
        value: kv.value,
        modRevision: Number(kv.mod_revision),
      });
      if (!wanted) break;
    }
    const last = response.kvs[response.kvs.length - 1];
    if (!wanted || !response.more || last === undefined) break;
    start = Buffer.concat([last.key, ZERO]);
  }
  return { ...page.result(), revision };
}

/** Appended to a key, makes the next key in etcd's byte order. */
const ZERO = Buffer.from([0]);
