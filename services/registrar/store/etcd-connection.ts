/**
 * The connection of one etcd store: its etcd3 client (see etcd-client.ts),
 * every request through one guard (refused once closed, with a deadline, a
 * read at a compacted revision turned into {@link StoreCompactedError}), and
 * every raw watch stream tracked, so that closing the store stops them all.
 * The store's operations (etcd-store.ts, etcd-writes.ts) use nothing else.
 */
import { allOriginsKeyPrefix, storeKeyPrefix } from "../../common/store-layout.js";
import type { EtcdSecurity } from "../../runtime/etcd-security.js";
import { StoreCompactedError, StoreUnavailableError } from "./config-store.js";
import { callEtcd, createEtcdClient, type EtcdClient, prefixEnd } from "./etcd-client.js";
import { type EtcdWatchSink, openEtcdWatch } from "./etcd-watch.js";

const COMPACTED = "required revision has been compacted";

/** Options of {@link createEtcdConnection}; every value already resolved (no defaults here). */
export interface EtcdConnectionOptions {
  /** The etcd client URLs; at least one. */
  readonly endpoints: readonly string[];
  /** TLS and authentication towards etcd (see etcd-security.ts); undefined for none. */
  readonly security: EtcdSecurity | undefined;
  /**
   * The store's normalized key prefix: `<prefix>/` is the key
   * {@link EtcdConnection.currentRevision} reads (inside the range every
   * registrar's etcd role may read), and the keys over all origins are
   * watched to find a compaction point.
   */
  readonly prefix: string;
  /** The bound on every request and on starting a watch, in milliseconds. */
  readonly requestTimeoutMs: number;
  /** How long a watch may be idle before a progress request probes it, in milliseconds. */
  readonly probeIntervalMs: number;
  /**
   * What the connection is for, a short word (see `createEtcdClient`):
   * connections of different purposes never share an HTTP/2 connection.
   */
  readonly purpose: string;
}

/** The guarded client of one etcd store; see {@link createEtcdConnection}. */
export interface EtcdConnection {
  /**
   * The etcd3 client, for building requests only: every request goes
   * through {@link EtcdConnection.call}, every watch through
   * {@link EtcdConnection.openWatch}.
   */
  readonly client: EtcdClient;
  /**
   * Runs one request with {@link callEtcd}'s deadline and error
   * translation. Rejects with {@link StoreUnavailableError} once
   * closed, and, when the request is a read at `revision` that etcd refuses
   * as compacted, with a {@link StoreCompactedError} naming the oldest
   * readable revision.
   */
  call<T>(
    what: string,
    request: (callOptions: { deadline: number }) => Promise<T>,
    revision?: number,
  ): Promise<T>;
  /**
   * Opens a raw watch stream over the keys starting with `keyPrefix`, from
   * `startRevision` on (see {@link openEtcdWatch}), that
   * {@link EtcdConnection.close} stops; returns the function that stops it.
   * Once closed, `sink.error` gets a {@link StoreUnavailableError} in a
   * microtask instead.
   */
  openWatch(startRevision: number, keyPrefix: string, sink: EtcdWatchSink): () => void;
  /**
   * Runs one write (a request that makes a revision) with the whole
   * deadline, tried again on another member only when the attempt was never
   * sent (no connection to the member picked): an attempt that timed out on
   * a slow member may still apply, and a retry would write the same change
   * again at a new revision (every watcher sees it twice). The caller
   * retries later, when the member that did not answer is set aside.
   * Rejects as {@link EtcdConnection.call} does.
   */
  callWrite<T>(
    what: string,
    request: (callOptions: { deadline: number }) => Promise<T>,
  ): Promise<T>;
  /** Reads the current revision with the cheapest request there is, through {@link EtcdConnection.call}. */
  currentRevision(what: string): Promise<number>;
  /** Stops every open watch and closes the client; afterwards every call is refused. Idempotent. */
  close(): void;
}

/**
 * Creates the connection of one etcd store. Nothing connects until the
 * first call; nothing it does raises an unhandled rejection or an unhandled
 * `error` event.
 */
export function createEtcdConnection(options: EtcdConnectionOptions): EtcdConnection {
  const { prefix, requestTimeoutMs, probeIntervalMs } = options;
  const client = createEtcdClient(options.endpoints, options.security, options.purpose);
  const watches = new Set<() => void>();
  let closed = false;

  const callWith = async <T>(
    what: string,
    request: (callOptions: { deadline: number }) => Promise<T>,
    revision: number | undefined,
    attemptsOver: number,
    write = false,
  ): Promise<T> => {
    if (closed) throw new StoreUnavailableError("the etcd store is closed");
    try {
      return await callEtcd(what, requestTimeoutMs, request, attemptsOver, write);
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

  const call = <T>(
    what: string,
    request: (callOptions: { deadline: number }) => Promise<T>,
    revision?: number,
  ): Promise<T> => callWith(what, request, revision, client.endpointCount);

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
        ...(sink.started === undefined ? {} : { started: sink.started }),
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

  const currentRevision = async (what: string): Promise<number> => {
    const response = await call(what, (callOptions) =>
      client.kv.range({ key: Buffer.from(storeKeyPrefix(prefix)), count_only: true }, callOptions),
    );
    return Number(response.header.revision);
  };

  return {
    client,
    call,
    callWrite: (what, request) => callWith(what, request, undefined, client.endpointCount, true),
    openWatch,
    currentRevision,
    close: () => {
      if (closed) return;
      closed = true;
      for (const stop of [...watches]) stop();
      client.close();
    },
  };
}
