/**
 * Leader election over etcd, so that of several registrar replicas of one
 * cluster exactly one exports.
 *
 * It is etcd's own election recipe (the Go client's `concurrency.Election`,
 * which etcd3's `Election` also implements): every candidate holds a lease
 * and a key `<name>/<lease id in hex>` attached to it; the candidate whose key
 * has the lowest creation revision leads; the others each wait for the key
 * just before theirs to be deleted. A leader that dies stops renewing its
 * lease, etcd deletes its key when the lease expires, and the next candidate
 * takes over within the TTL.
 *
 * It is built on raw calls (see etcd-store.ts) instead of etcd3's `Campaign`,
 * whose behaviour in etcd3 1.1.2 is unsafe for this: its lease notices a lost
 * lease only after twice the TTL without an answer (a deposed leader would
 * go on exporting for a whole TTL after another replica took over), its
 * waits use etcd3's watch manager, which reconnects forever and can emit
 * `error` events nobody listens to (which crashes the process), and the
 * client's default circuit breaker refuses every call for five seconds after
 * three failures. Here every request has a deadline, every watch is one raw
 * stream that fails once, and a leader's term ends as soon as its lease can
 * no longer be proven alive: the lease's TTL after the last keep-alive that
 * etcd answered, measured from when it was sent.
 *
 * Each term carries a fence: the leader's key and its creation revision. The
 * store writes only while that key still exists with that revision (an etcd
 * transaction), so even a leader that was frozen past its lease cannot
 * write once it wakes up.
 */
import { hostname } from "node:os";
import {
  CompareResult,
  CompareTarget,
  type Etcd3,
  type IDuplexStream,
  type ILeaseKeepAliveRequest,
  type ILeaseKeepAliveResponse,
  SortOrder,
  SortTarget,
} from "etcd3";
import { createBackoff } from "../../runtime/backoff.js";
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import { sleep } from "../../runtime/sleep.js";
import type { EtcdSecurity } from "../store/etcd-security.js";
import {
  callEtcd,
  closeStream,
  createEtcdClient,
  DEFAULT_REQUEST_TIMEOUT_MS,
  openEtcdWatch,
  prefixEnd,
} from "../store/etcd-store.js";
import { createTermKeeper, type LeaderElection } from "./leader-election.js";

/** The default lease TTL of the export election, in milliseconds. */
export const DEFAULT_ELECTION_TTL_MS = 10_000;

/** Options of {@link createEtcdLeaderElection}. */
export interface EtcdLeaderElectionOptions {
  /** The etcd client URLs; at least one. */
  readonly endpoints: readonly string[];
  /**
   * The election: candidates' keys are `<name>/<lease id in hex>`. Use
   * {@link exportElectionName} for the export controller.
   */
  readonly name: string;
  /**
   * The lease TTL in milliseconds, rounded up to whole seconds (at least one);
   * etcd may raise it to its own minimum (two seconds with default settings).
   * Default {@link DEFAULT_ELECTION_TTL_MS}.
   */
  readonly ttlMs?: number;
  /** What this candidate writes in its key, for operators; default `<hostname>/<pid>`. */
  readonly identity?: string;
  /** Where elections, losses and errors are reported; default silent. */
  readonly logger?: Logger;
  /** The bound on every etcd request, in milliseconds; default 2 s. */
  readonly requestTimeoutMs?: number;
  /** A source of uniform numbers in [0, 1) for retry jitter; default `Math.random`. */
  readonly random?: () => number;
  /** TLS and authentication towards etcd (see etcd-security.ts); default none. */
  readonly security?: EtcdSecurity;
}

/** Returns the name of one origin's export election under a store prefix. */
export function exportElectionName(prefix: string, origin: string): string {
  return `${prefix}/election/${origin}/export`;
}

/** A promise with its resolve function, resolved at most once. */
function settleOnce<T>(): { promise: Promise<T>; resolve(value: T): void; settled(): boolean } {
  let resolveFn: (value: T) => void = () => {};
  let done = false;
  const promise = new Promise<T>((resolve) => {
    resolveFn = resolve;
  });
  return {
    promise,
    resolve(value) {
      if (done) return;
      done = true;
      resolveFn(value);
    },
    settled: () => done,
  };
}

/**
 * Creates an etcd election. `start()` campaigns in the background until
 * `stop()`: each time this candidate is elected a term begins, and it ends
 * when the lease is lost or cannot be proven alive, when the term is
 * relinquished, or at `stop()` (which also resigns: the lease is revoked, so
 * another candidate takes over at once). After a term ends, it campaigns
 * again (with a new lease). While etcd is unreachable it retries with
 * exponential backoff and jitter. Nothing it does raises an unhandled
 * rejection or an unhandled `error` event.
 */
export function createEtcdLeaderElection(options: EtcdLeaderElectionOptions): LeaderElection {
  const client: Etcd3 = createEtcdClient(options.endpoints, options.security);
  const name = options.name.replace(/\/+$/, "");
  const ttlSeconds = Math.max(1, Math.ceil((options.ttlMs ?? DEFAULT_ELECTION_TTL_MS) / 1000));
  const identity = options.identity ?? `${hostname()}/${process.pid}`;
  const logger = options.logger ?? createSilentLogger();
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const backoff = createBackoff({
    initialMs: 100,
    maxMs: Math.min(5_000, ttlSeconds * 1_000),
    ...(options.random === undefined ? {} : { random: options.random }),
  });
  const keeper = createTermKeeper();
  const stopping = new AbortController();
  let state: "idle" | "running" | "stopped" = "idle";
  let loop: Promise<void> | undefined;
  /** Ends the running session with a reason; undefined between sessions. */
  let endSession: ((reason: string) => void) | undefined;

  /**
   * Keeps a lease alive over one keep-alive stream at a time (re-opened when
   * it fails) and calls `onLost` once when etcd says the lease is gone, or
   * when its TTL has run out since the last answered keep-alive was sent.
   * Returns the function that stops it.
   */
  const keepLeaseAlive = (
    leaseId: string,
    ttlMs: number,
    grantSentAt: number,
    onLost: (reason: string) => void,
  ): (() => void) => {
    let validUntil = grantSentAt + ttlMs;
    let stream: IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse> | undefined;
    let sentTimes: number[] = [];
    let lostTimer: NodeJS.Timeout | undefined;
    let reopenTimer: NodeJS.Timeout | undefined;
    let closed = false;

    const close = (): void => {
      if (closed) return;
      closed = true;
      clearTimeout(lostTimer);
      clearTimeout(reopenTimer);
      clearInterval(interval);
      if (stream !== undefined) closeStream(stream);
      stream = undefined;
    };
    const lose = (reason: string): void => {
      if (closed) return;
      close();
      onLost(reason);
    };
    const armLostTimer = (): void => {
      clearTimeout(lostTimer);
      lostTimer = setTimeout(
        () => lose(`no keep-alive answered within the ${ttlMs} ms lease TTL`),
        Math.max(0, validUntil - Date.now()),
      );
    };
    const send = (): void => {
      if (stream === undefined) return;
      sentTimes.push(Date.now());
      stream.write({ ID: leaseId });
    };
    const streamFailed = (failed: typeof stream, reason: string): void => {
      if (closed || failed !== stream) return;
      if (stream !== undefined) closeStream(stream);
      stream = undefined;
      logger.debug({ reason }, "lease keep-alive stream failed; re-opening");
      reopenTimer = setTimeout(open, 200);
    };
    const open = (): void => {
      client.leaseClient.leaseKeepAlive().then(
        (opened) => {
          // An 'error' listener first, always: an unhandled 'error' event would crash the process.
          opened.on("error", (error: Error) => streamFailed(opened, error.message));
          if (closed) {
            closeStream(opened);
            return;
          }
          stream = opened;
          sentTimes = [];
          opened.on("data", (response: ILeaseKeepAliveResponse) => {
            const sentAt = sentTimes.shift() ?? grantSentAt;
            if (response.TTL === "0") {
              lose("etcd says the lease has expired");
              return;
            }
            validUntil = Math.max(validUntil, sentAt + Number(response.TTL) * 1_000);
            armLostTimer();
          });
          opened.on("end", () => streamFailed(opened, "the stream ended"));
          send();
        },
        (error: unknown) => {
          if (!closed) reopenTimer = setTimeout(open, 200);
          logger.debug({ err: error }, "could not open a lease keep-alive stream");
        },
      );
    };
    const interval = setInterval(send, Math.max(100, ttlMs / 3));
    armLostTimer();
    open();
    return close;
  };

  /** Resolves once no candidate key was created before `createRevision`, or `signal` aborts. */
  const waitForPredecessors = async (createRevision: number, signal: AbortSignal) => {
    const keyPrefix = `${name}/`;
    while (!signal.aborted) {
      const response = await callEtcd("election range", requestTimeoutMs, (callOptions) =>
        client.kv.range(
          {
            key: Buffer.from(keyPrefix),
            range_end: prefixEnd(keyPrefix),
            max_create_revision: createRevision - 1,
            sort_target: SortTarget.Create,
            sort_order: SortOrder.Descend,
            limit: 1,
          },
          callOptions,
        ),
      );
      const predecessor = response.kvs[0];
      if (predecessor === undefined) return;
      logger.debug(
        { predecessor: predecessor.key.toString("utf8") },
        "waiting for the export leader's key to go",
      );
      await waitForDelete(predecessor.key, Number(response.header.revision) + 1, signal);
    }
  };

  /** Resolves once `key` is deleted after `startRevision`, or `signal` aborts; rejects when the watch fails. */
  const waitForDelete = (key: Buffer, startRevision: number, signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      const done = (): void => {
        signal.removeEventListener("abort", done);
        stop();
        resolve();
      };
      const stop = openEtcdWatch(
        client,
        { key, startRevision, requestTimeoutMs, probeIntervalMs: requestTimeoutMs },
        {
          changes: (changes) => {
            if (changes.some((change) => change.type === "delete")) done();
          },
          error: (error) => {
            signal.removeEventListener("abort", done);
            reject(error);
          },
        },
      );
      signal.addEventListener("abort", done, { once: true });
    });

  /** One campaign with one lease: resolves when it ends, rejects when etcd fails it. */
  const session = async (): Promise<void> => {
    const ended = settleOnce<string>();
    const aborted = new AbortController();
    /** Ends the session, and its term at once (writes stop before anything else runs). */
    const finish = (reason: string): void => {
      if (ended.settled()) return;
      keeper.end(reason);
      aborted.abort(reason);
      ended.resolve(reason);
    };
    endSession = finish;
    const onStop = (): void => finish("stopped");
    stopping.signal.addEventListener("abort", onStop, { once: true });
    let stopKeepalive = (): void => {};
    let leaseId: string | undefined;
    try {
      const grantSentAt = Date.now();
      const grant = await callEtcd("lease grant", requestTimeoutMs, (callOptions) =>
        client.leaseClient.leaseGrant({ TTL: ttlSeconds }, callOptions),
      );
      leaseId = grant.ID;
      const ttlMs = Number(grant.TTL) * 1_000;
      stopKeepalive = keepLeaseAlive(grant.ID, ttlMs, grantSentAt, finish);
      const key = `${name}/${BigInt(grant.ID).toString(16)}`;
      const keyBytes = Buffer.from(key);
      const created = await callEtcd("campaign", requestTimeoutMs, (callOptions) =>
        client.kv.txn(
          {
            compare: [
              {
                key: keyBytes,
                target: CompareTarget.Create,
                result: CompareResult.Equal,
                create_revision: 0,
              },
            ],
            success: [
              { request_put: { key: keyBytes, value: Buffer.from(identity), lease: grant.ID } },
            ],
            failure: [{ request_range: { key: keyBytes } }],
          },
          callOptions,
        ),
      );
      const createRevision = created.succeeded
        ? Number(created.header.revision)
        : Number(created.responses[0]?.response_range.kvs[0]?.create_revision ?? Number.NaN);
      if (!Number.isSafeInteger(createRevision)) {
        throw new Error(`the campaign key ${key} vanished right after it was written`);
      }
      logger.debug({ key, createRevision, ttlMs }, "campaigning for export leadership");
      await waitForPredecessors(createRevision, aborted.signal);
      if (ended.settled()) return;
      const term = keeper.begin({ key, createRevision });
      backoff.reset();
      logger.info({ term: term.id, key, createRevision, ttlMs, identity }, "elected export leader");
      const reason = await ended.promise;
      if (reason === "stopped") logger.info({ term: term.id }, "resigned export leadership");
      else logger.warn({ term: term.id, reason }, "export leadership lost");
    } finally {
      finish("the campaign ended");
      endSession = undefined;
      stopping.signal.removeEventListener("abort", onStop);
      stopKeepalive();
      if (leaseId !== undefined) await revoke(leaseId);
    }
  };

  /** Revokes a lease (deleting the candidate's key) with a deadline; failures are only logged. */
  const revoke = async (leaseId: string): Promise<void> => {
    try {
      await callEtcd("lease revoke", requestTimeoutMs, (callOptions) =>
        client.leaseClient.leaseRevoke({ ID: leaseId }, callOptions),
      );
    } catch (error) {
      logger.debug({ err: error }, "could not revoke the election lease (it expires by itself)");
    }
  };

  const run = async (): Promise<void> => {
    while (state === "running") {
      let delay = 0;
      try {
        await session();
        delay = backoff.next();
      } catch (error) {
        delay = backoff.next();
        logger.warn(
          {
            err: error instanceof Error ? error.message : String(error),
            retryInMs: Math.round(delay),
          },
          "export leader election failed; retrying",
        );
      }
      if (state !== "running") return;
      await sleep(delay, stopping.signal);
    }
  };

  return {
    kind: "etcd",
    get term() {
      return keeper.current;
    },
    start() {
      if (state !== "idle") return;
      state = "running";
      loop = run().catch((error: unknown) => {
        logger.error({ err: error }, "export leader election loop failed");
      });
    },
    async stop() {
      if (state === "stopped") return;
      state = "stopped";
      stopping.abort("stopped");
      await loop;
      client.close();
    },
    onChange: keeper.onChange,
    relinquish(term, reason) {
      if (keeper.current !== term) return;
      endSession?.(reason);
    },
  };
}
