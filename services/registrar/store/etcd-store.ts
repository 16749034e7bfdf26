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
 */
import { handleWhen, noop, retry } from "cockatiel";
import {
  ClientClosedError,
  CompareResult,
  CompareTarget,
  Etcd3,
  GRPCGenericError,
  type IDuplexStream,
  type IKeyValue,
  type IRequestOp,
  type IWatchRequest,
  type IWatchResponse,
  isRecoverableError,
} from "etcd3";
import type { ServiceConfigProjection } from "../../../gen/aether/registry/v1/projection_pb.js";
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import {
  type ConfigStore,
  FencedWriteError,
  type ListOptions,
  type ListResult,
  type ProjectionFilter,
  StoreCompactedError,
  StoreUnavailableError,
  type StoreWatch,
  type StoreWrite,
  type WatchHandler,
  type WriteFence,
  type WriteOptions,
} from "./config-store.js";
import {
  assertServiceKey,
  callHandler,
  checkListOptions,
  checkWatchRevision,
  createEntryDecoder,
  createPageCollector,
  encodeProjection,
  encodeWriteBatch,
  listRange,
  type RawChange,
} from "./decode-entry.js";
import { type EtcdSecurity, etcdSecurityOptions } from "./etcd-security.js";
import {
  allOriginsKeyPrefix,
  DEFAULT_STORE_PREFIX,
  normalizePrefix,
  originKeyPrefix,
  projectionKey,
} from "./store-key.js";

/** The default bound on every etcd request, in milliseconds. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 2_000;

/** The default interval between liveness probes of a watch stream, in milliseconds. */
export const DEFAULT_WATCH_PROBE_INTERVAL_MS = 5_000;

/** How many keys one range request reads at most. */
const RANGE_BATCH = 1_000;

const COMPACTED = "required revision has been compacted";
const FUTURE = "required revision is a future revision";

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
 * Creates a store backed by etcd. Nothing connects until the first call; a
 * call made while etcd is unreachable rejects with
 * {@link StoreUnavailableError} and the next one tries again. Nothing the
 * store does can raise an unhandled rejection or an unhandled `error` event.
 */
export function createEtcdStore(options: EtcdStoreOptions): ConfigStore {
  if (options.endpoints.length === 0) throw new TypeError("at least one etcd endpoint is needed");
  const origin = options.origin;
  const prefix = normalizePrefix(options.prefix ?? DEFAULT_STORE_PREFIX);
  const logger = options.logger ?? createSilentLogger();
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const probeIntervalMs = options.watchProbeIntervalMs ?? DEFAULT_WATCH_PROBE_INTERVAL_MS;
  const decoder = createEntryDecoder({ prefix, logger });
  const client = createEtcdClient(options.endpoints, options.security);
  const watches = new Set<() => void>();
  let closed = false;

  /**
   * Runs one request with {@link callEtcd}'s deadline and error translation.
   * A read at a compacted `revision` rejects with {@link StoreCompactedError}.
   */
  const call = async <T>(
    what: string,
    request: (callOptions: { deadline: number }) => Promise<T>,
    revision?: number,
  ): Promise<T> => {
    if (closed) throw new StoreUnavailableError("the etcd store is closed");
    try {
      return await callEtcd(what, requestTimeoutMs, request);
    } catch (error) {
      if (revision !== undefined && error instanceof Error && error.message.includes(COMPACTED)) {
        const oldest = await findCompactRevision(revision);
        throw new StoreCompactedError(
          `revision ${revision} has been compacted (oldest readable: ${oldest})`,
          oldest,
        );
      }
      throw error;
    }
  };

  /**
   * Opens a raw watch stream over the keys starting with `keyPrefix`, from
   * `startRevision` on (see {@link openEtcdWatch}), that `close()` stops.
   */
  const openWatch = (
    startRevision: number,
    keyPrefix: string,
    sink: EtcdWatchSink,
  ): (() => void) => {
    if (closed) {
      queueMicrotask(() => sink.error(new StoreUnavailableError("the etcd store is closed")));
      return () => {};
    }
    const stop = (): void => {
      watches.delete(stop);
      stopRaw();
    };
    const stopRaw = openEtcdWatch(
      client,
      {
        key: Buffer.from(keyPrefix),
        rangeEnd: prefixEnd(keyPrefix),
        startRevision,
        requestTimeoutMs,
        probeIntervalMs,
      },
      {
        changes: sink.changes,
        error: (error) => {
          watches.delete(stop);
          sink.error(error);
        },
      },
    );
    watches.add(stop);
    return stop;
  };

  /**
   * Finds etcd's compaction point after a read at `revision` failed as
   * compacted: etcd 3.4 says so only to a watch, so this starts one there.
   * Falls back to `revision + 1` (a lower bound) when etcd does not say.
   */
  const findCompactRevision = (revision: number): Promise<number> =>
    new Promise((resolve) => {
      const fallback = (): void => {
        stop();
        resolve(revision + 1);
      };
      const stop = openWatch(revision, allOriginsKeyPrefix(prefix), {
        changes: () => {},
        error: (error) => {
          clearTimeout(guard);
          if (error instanceof StoreCompactedError) resolve(error.compactRevision);
          else fallback();
        },
      });
      const guard = setTimeout(fallback, requestTimeoutMs);
    });

  /**
   * Runs `operation` (one or several) in a transaction guarded by `fence` (the fence key's
   * creation revision must still be the fence's); rejects with
   * {@link FencedWriteError} when the guard fails.
   */
  const fencedTxn = async (
    what: string,
    fence: WriteFence,
    operation: IRequestOp | readonly IRequestOp[],
  ) => {
    const response = await call(what, (callOptions) =>
      client.kv.txn(
        {
          compare: [
            {
              key: Buffer.from(fence.key),
              target: CompareTarget.Create,
              result: CompareResult.Equal,
              create_revision: fence.createRevision,
            },
          ],
          success: Array.isArray(operation) ? [...operation] : [operation as IRequestOp],
        },
        callOptions,
      ),
    );
    if (!response.succeeded) {
      throw new FencedWriteError(
        `fenced ${what} refused: ${fence.key} no longer has creation revision ${fence.createRevision}`,
        fence,
      );
    }
    return response;
  };

  const list = async (listOptions: ListOptions = {}): Promise<ListResult> => {
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
      const response = await call(
        "range",
        (callOptions) =>
          client.kv.range(
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
  };

  /** Reads the current revision with the cheapest request there is. */
  const currentRevision = async (what: string): Promise<number> => {
    const response = await call(what, (callOptions) =>
      client.kv.range({ key: Buffer.from(prefix), count_only: true }, callOptions),
    );
    return Number(response.header.revision);
  };

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
    const stop = openWatch(afterRevision + 1, keyPrefix, {
      changes: (changes) => {
        const events = decoder.decodeChanges(changes, filter);
        if (events.length > 0) callHandler(logger, () => handler.onEvents(events));
      },
      error: (error) => {
        logger.warn({ err: error, keyPrefix }, "etcd watch ended");
        callHandler(logger, () => handler.onError(error));
      },
    });
    return { cancel: async () => stop() };
  };

  return {
    kind: "etcd",
    origin,
    prefix,
    counters: decoder.counters,
    list,
    revision: () => currentRevision("revision"),
    put: async (projection: ServiceConfigProjection, writeOptions?: WriteOptions) => {
      const key = Buffer.from(projectionKey(prefix, origin, projection.service));
      const value = Buffer.from(encodeProjection(projection, origin));
      const fence = writeOptions?.fence;
      if (fence === undefined) {
        const response = await call("put", (callOptions) =>
          client.kv.put({ key, value }, callOptions),
        );
        return Number(response.header.revision);
      }
      const response = await fencedTxn("put", fence, { request_put: { key, value } });
      return Number(response.header.revision);
    },
    delete: async (service: string, writeOptions?: WriteOptions) => {
      assertServiceKey(service);
      const key = Buffer.from(projectionKey(prefix, origin, service));
      const fence = writeOptions?.fence;
      let deleted: string;
      let revision: string;
      if (fence === undefined) {
        const response = await call("delete", (callOptions) =>
          client.kv.deleteRange({ key }, callOptions),
        );
        ({ deleted } = response);
        revision = response.header.revision;
      } else {
        const response = await fencedTxn("delete", fence, { request_delete_range: { key } });
        deleted = response.responses[0]?.response_delete_range.deleted ?? "0";
        revision = response.header.revision;
      }
      return deleted === "0" ? undefined : Number(revision);
    },
    write: async (changes: readonly StoreWrite[], writeOptions?: WriteOptions) => {
      const encoded = encodeWriteBatch(prefix, origin, changes, decoder);
      if (encoded.length === 0) return currentRevision("write");
      const operations: IRequestOp[] = encoded.map(({ key, value }) =>
        value === undefined
          ? { request_delete_range: { key: Buffer.from(key) } }
          : { request_put: { key: Buffer.from(key), value: Buffer.from(value) } },
      );
      const fence = writeOptions?.fence;
      if (fence === undefined) {
        const response = await call("write", (callOptions) =>
          client.kv.txn({ compare: [], success: operations }, callOptions),
        );
        return Number(response.header.revision);
      }
      const response = await fencedTxn("write", fence, operations);
      return Number(response.header.revision);
    },
    watch,
    ping: async () => {
      await currentRevision("ping");
    },
    close: async () => {
      if (closed) return;
      closed = true;
      for (const stop of [...watches]) stop();
      client.close();
    },
  };
}

/**
 * Creates an etcd3 client used for its connection handling only, with
 * etcd3's dangerous defaults replaced: no circuit breaker (it would refuse
 * every call for five seconds after three failures, long after etcd is
 * back), a retry only on the other endpoints, and a reconnect backoff of at
 * most one second. Callers make every request through {@link callEtcd} and
 * every watch through {@link openEtcdWatch}, never through etcd3's builders,
 * watchers, leases or elections (which retry and reconnect on their own).
 * `security` adds TLS (`credentials`) and etcd authentication (`auth`).
 */
export function createEtcdClient(endpoints: readonly string[], security?: EtcdSecurity): Etcd3 {
  if (endpoints.length === 0) throw new TypeError("at least one etcd endpoint is needed");
  return new Etcd3({
    hosts: [...endpoints],
    ...etcdSecurityOptions(security),
    faultHandling: {
      // No circuit breaker: it would refuse calls for seconds after etcd is back.
      host: () => noop,
      // Retry a failed call on the other endpoints only, within the same deadline.
      global:
        endpoints.length > 1
          ? retry(handleWhen(isRecoverableError), { maxAttempts: endpoints.length - 1 })
          : noop,
    },
    grpcOptions: {
      // gRPC's reconnect backoff grows to two minutes by default; a restarted
      // etcd must be usable again within a second.
      "grpc.initial_reconnect_backoff_ms": 100,
      "grpc.max_reconnect_backoff_ms": 1_000,
      // gRPC refuses responses over 4 MiB by default; a batch of large
      // projections must not turn into a permanent "unavailable".
      "grpc.max_receive_message_length": 256 * 1024 * 1024,
    },
  });
}

/**
 * Maps an etcd client error to the store's errors: connection and gRPC
 * errors become {@link StoreUnavailableError} (naming `what`), a read in the
 * future a RangeError; the store's own errors pass through unchanged.
 */
export function translateEtcdError(error: unknown, what: string): Error {
  if (
    error instanceof StoreUnavailableError ||
    error instanceof StoreCompactedError ||
    error instanceof FencedWriteError ||
    error instanceof RangeError
  ) {
    return error;
  }
  const message = error instanceof Error ? error.message : String(error);
  if (message.includes(FUTURE)) return new RangeError(`etcd ${what}: ${message}`);
  if (
    error instanceof ClientClosedError ||
    error instanceof GRPCGenericError ||
    (error instanceof Error && (isRecoverableError(error) || "code" in error))
  ) {
    return new StoreUnavailableError(`etcd ${what} failed: ${message}`, { cause: error });
  }
  return error instanceof Error ? error : new Error(message);
}

/**
 * Runs one etcd request with a deadline of `timeoutMs` (enforced by gRPC
 * and, as a safety net, by a timer) and rejects with the error
 * {@link translateEtcdError} makes of a failure: an unreachable or frozen
 * etcd rejects with {@link StoreUnavailableError} within the deadline.
 */
export async function callEtcd<T>(
  what: string,
  timeoutMs: number,
  request: (callOptions: { deadline: number }) => Promise<T>,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new StoreUnavailableError(`etcd ${what} took over ${timeoutMs} ms`)),
      timeoutMs + 100,
    );
  });
  try {
    return await Promise.race([request({ deadline: Date.now() + timeoutMs }), timeout]);
  } catch (error) {
    throw translateEtcdError(error, what);
  } finally {
    clearTimeout(timer);
  }
}

/** What {@link openEtcdWatch} watches. */
export interface EtcdWatchSpec {
  /** The first key (or the only key, without `rangeEnd`). */
  readonly key: Buffer;
  /** The end of the key range (exclusive); undefined watches `key` alone. */
  readonly rangeEnd?: Buffer;
  /** The first revision to report. */
  readonly startRevision: number;
  /** How long the stream may take to start, and to answer a progress request, in milliseconds. */
  readonly requestTimeoutMs: number;
  /** How long the stream may be idle before a progress request probes it, in milliseconds. */
  readonly probeIntervalMs: number;
}

/** Receives what a raw watch stream reports; see {@link openEtcdWatch}. */
export interface EtcdWatchSink {
  /** Called with every non-empty batch of changes, in revision order. */
  changes(changes: RawChange[]): void;
  /** Called once when the watch cannot continue; nothing is reported afterwards. */
  error(error: Error): void;
}

/**
 * Opens a raw etcd watch stream (not etcd3's reconnecting watcher) and
 * reports to `sink` until it fails (one `sink.error`: a
 * {@link StoreCompactedError} when the start revision was compacted, a
 * {@link StoreUnavailableError} when the stream fails, ends, is cancelled by
 * etcd, or does not answer a liveness probe in time) or the returned function
 * stops it (nothing is reported afterwards). Never raises an unhandled error
 * event.
 */
export function openEtcdWatch(client: Etcd3, spec: EtcdWatchSpec, sink: EtcdWatchSink): () => void {
  const { requestTimeoutMs, probeIntervalMs, startRevision } = spec;
  const what = spec.key.toString("utf8");
  let done = false;
  let stream: IDuplexStream<IWatchRequest, IWatchResponse> | undefined;
  let timer: NodeJS.Timeout | undefined;

  const finish = (error?: Error): void => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    if (stream !== undefined) closeStream(stream);
    if (error !== undefined) sink.error(error);
  };
  const unavailable = (reason: string, cause?: unknown): StoreUnavailableError =>
    new StoreUnavailableError(`etcd watch on ${what}: ${reason}`, { cause });

  /** Expects an answer within the request timeout, then probes again after the interval. */
  const expectAnswer = (reason: string): void => {
    clearTimeout(timer);
    timer = setTimeout(() => finish(unavailable(reason)), requestTimeoutMs);
  };
  const scheduleProbe = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      stream?.write({ progress_request: {} });
      expectAnswer(`no answer to a progress request within ${requestTimeoutMs} ms`);
    }, probeIntervalMs);
  };

  const onResponse = (response: IWatchResponse): void => {
    if (done) return;
    scheduleProbe();
    if (response.compact_revision !== "0" && response.compact_revision !== "") {
      const oldest = Number(response.compact_revision);
      finish(
        new StoreCompactedError(
          `revision ${startRevision} has been compacted (oldest readable: ${oldest})`,
          oldest,
        ),
      );
    } else if (response.canceled) {
      finish(unavailable(`etcd cancelled the watch: ${response.cancel_reason || "no reason"}`));
    } else if (response.events.length > 0) {
      sink.changes(response.events.map(toRawChange));
    }
  };

  expectAnswer(`not started within ${requestTimeoutMs} ms`);
  client.watchClient.watch().then(
    (opened) => {
      // An 'error' listener first, always: an unhandled 'error' event would crash the process.
      opened.on("error", (error) => finish(unavailable(error.message, error)));
      if (done) {
        closeStream(opened);
        return;
      }
      stream = opened;
      opened.on("data", onResponse);
      opened.on("end", () => finish(unavailable("the stream ended")));
      opened.write({
        create_request: {
          key: spec.key,
          ...(spec.rangeEnd === undefined ? {} : { range_end: spec.rangeEnd }),
          start_revision: startRevision,
        },
      });
    },
    (error: unknown) => finish(unavailable(String(error), error)),
  );
  return () => finish();
}

const ZERO = Buffer.from([0]);

/** Returns the end of the key range of every key starting with `keyPrefix`. */
export function prefixEnd(keyPrefix: string): Buffer {
  const end = Buffer.from(keyPrefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] as number) < 0xff) {
      end[i] = (end[i] as number) + 1;
      return end.subarray(0, i + 1);
    }
  }
  return ZERO;
}

/** Converts an etcd watch event to a raw change. */
function toRawChange(event: { type: string; kv: IKeyValue }): RawChange {
  const key = event.kv.key.toString("utf8");
  const revision = Number(event.kv.mod_revision);
  return event.type === "Delete"
    ? { type: "delete", key, revision }
    : { type: "put", key, value: event.kv.value, revision };
}

/**
 * Closes a raw etcd stream (a watch or a lease keep-alive). Ending the
 * request side first keeps etcd3 from treating the cancellation as a host
 * failure (which would reset every client of the connection). Never throws.
 */
export function closeStream<Request, Response>(stream: IDuplexStream<Request, Response>): void {
  try {
    stream.end();
    stream.cancel();
  } catch {
    // The stream is already gone; nothing to release.
  }
}
