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
  Etcd3,
  GRPCGenericError,
  type IDuplexStream,
  type IKeyValue,
  type IWatchRequest,
  type IWatchResponse,
  isRecoverableError,
} from "etcd3";
import type { ServiceConfigProjection } from "../../../gen/aether/registry/v1/projection_pb.js";
import { createSilentLogger, type Logger } from "../logger.js";
import {
  type ConfigStore,
  type ListOptions,
  type ListResult,
  type ProjectionFilter,
  StoreCompactedError,
  StoreUnavailableError,
  type StoreWatch,
  type WatchHandler,
} from "./config-store.js";
import {
  assertServiceKey,
  callHandler,
  checkListOptions,
  checkWatchRevision,
  createEntryDecoder,
  createPageCollector,
  encodeProjection,
  listRange,
  type RawChange,
} from "./decode-entry.js";
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
}

/** Receives what a raw watch stream reports; see `openWatch`. */
interface WatchSink {
  changes(changes: RawChange[]): void;
  error(error: Error): void;
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
  const client = new Etcd3({
    hosts: [...options.endpoints],
    faultHandling: {
      // No circuit breaker: it would refuse calls for seconds after etcd is back.
      host: () => noop,
      // Retry a failed call on the other endpoints only, within the same deadline.
      global:
        options.endpoints.length > 1
          ? retry(handleWhen(isRecoverableError), { maxAttempts: options.endpoints.length - 1 })
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
  const watches = new Set<() => void>();
  let closed = false;

  /** Maps a client error to the store's errors; compaction is handled by the caller. */
  const translate = (error: unknown, what: string): Error => {
    if (
      error instanceof StoreUnavailableError ||
      error instanceof StoreCompactedError ||
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
  };

  /**
   * Runs one request with a deadline of `requestTimeoutMs` (enforced by gRPC
   * and, as a safety net, by a timer) and translates its errors. A read at a
   * compacted `revision` rejects with {@link StoreCompactedError}.
   */
  const call = async <T>(
    what: string,
    request: (callOptions: { deadline: number }) => Promise<T>,
    revision?: number,
  ): Promise<T> => {
    if (closed) throw new StoreUnavailableError("the etcd store is closed");
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new StoreUnavailableError(`etcd ${what} took over ${requestTimeoutMs} ms`)),
        requestTimeoutMs + 100,
      );
    });
    try {
      return await Promise.race([request({ deadline: Date.now() + requestTimeoutMs }), timeout]);
    } catch (error) {
      if (revision !== undefined && error instanceof Error && error.message.includes(COMPACTED)) {
        const oldest = await findCompactRevision(revision);
        throw new StoreCompactedError(
          `revision ${revision} has been compacted (oldest readable: ${oldest})`,
          oldest,
        );
      }
      throw translate(error, what);
    } finally {
      clearTimeout(timer);
    }
  };

  /**
   * Opens a raw watch stream over the keys starting with `keyPrefix`, from
   * `startRevision` on, and reports to `sink` until it fails (one
   * `sink.error`) or the returned function stops it (no more calls).
   */
  const openWatch = (startRevision: number, keyPrefix: string, sink: WatchSink): (() => void) => {
    let done = false;
    let stream: IDuplexStream<IWatchRequest, IWatchResponse> | undefined;
    let timer: NodeJS.Timeout | undefined;

    const finish = (error?: Error): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      watches.delete(stop);
      if (stream !== undefined) closeStream(stream);
      if (error !== undefined) sink.error(error);
    };
    const stop = (): void => finish();
    const unavailable = (reason: string, cause?: unknown): StoreUnavailableError =>
      new StoreUnavailableError(`etcd watch on ${keyPrefix}: ${reason}`, { cause });

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

    watches.add(stop);
    expectAnswer(`not started within ${requestTimeoutMs} ms`);
    if (closed) {
      queueMicrotask(() => finish(new StoreUnavailableError("the etcd store is closed")));
      return stop;
    }
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
            key: Buffer.from(keyPrefix),
            range_end: prefixEnd(keyPrefix),
            start_revision: startRevision,
          },
        });
      },
      (error: unknown) => finish(unavailable(String(error), error)),
    );
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
    put: async (projection: ServiceConfigProjection) => {
      const key = Buffer.from(projectionKey(prefix, origin, projection.service));
      const value = Buffer.from(encodeProjection(projection, origin));
      const response = await call("put", (callOptions) =>
        client.kv.put({ key, value }, callOptions),
      );
      return Number(response.header.revision);
    },
    delete: async (service: string) => {
      assertServiceKey(service);
      const key = Buffer.from(projectionKey(prefix, origin, service));
      const response = await call("delete", (callOptions) =>
        client.kv.deleteRange({ key }, callOptions),
      );
      return response.deleted === "0" ? undefined : Number(response.header.revision);
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

const ZERO = Buffer.from([0]);

/** Returns the end of the key range of every key starting with `keyPrefix`. */
function prefixEnd(keyPrefix: string): Buffer {
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
 * Closes a watch stream. Ending the request side first keeps etcd3 from
 * treating the cancellation as a host failure (which would reset every client
 * of the connection).
 */
function closeStream(stream: IDuplexStream<IWatchRequest, IWatchResponse>): void {
  try {
    stream.end();
    stream.cancel();
  } catch {
    // The stream is already gone; nothing to release.
  }
}
