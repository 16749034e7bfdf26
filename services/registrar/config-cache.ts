/**
 * The registrar's versioned view of the shared store: one list-then-watch of
 * every origin's projections, kept in memory, with the import policy applied,
 * and a bounded log of recent changes so that watch streams can resume. Watch
 * streams are served from this cache only (one store watch however many
 * streams), in the manner of go-control-plane's snapshot cache and Cilium's
 * kvstore watch store: list, then watch, an explicit synced state, and a
 * re-list that sweeps stale entries after the store was lost.
 *
 * This file is the shell: the connect loop (list, watch, ping, back off), the
 * state and its waiters, and the fan-out to subscribers. What it holds lives
 * in two synchronous, timer-free cores: the projection index
 * (`projection-index.ts`) and the change log (`change-log.ts`).
 */
import type { ImportConflict, ImportPolicy, ImportRejection } from "../common/import-policy.js";
import { createSilentLogger, type Logger } from "../runtime/logger.js";
import { wakeableSleep } from "../runtime/sleep.js";
import { type CachedProjection, toCachedProjection } from "./cached-projection.js";
import { createChangeLog, eventsFor } from "./change-log.js";
import {
  type CacheEvent,
  type CacheView,
  type ChangeRecord,
  createProjectionIndex,
  type IndexStats,
} from "./projection-index.js";
import {
  type ConfigStore,
  type StoredProjection,
  type StoreEvent,
  StoreUnavailableError,
  type StoreWatch,
} from "./store/config-store.js";

export { type CachedProjection, decodeCachedProjection } from "./cached-projection.js";
export type { CacheEvent, CacheView } from "./projection-index.js";

/** The state of the cache. */
export type CacheState = "starting" | "synced" | "unavailable" | "stopped";

/** What a new subscriber gets first. */
export type InitialSync =
  | {
      /** A full snapshot: the subscriber replaces its state with `entries`. */
      readonly kind: "snapshot";
      /** The matching projections, by service then origin. */
      readonly entries: CachedProjection[];
      /** The revision the snapshot is consistent with. */
      readonly revision: number;
    }
  | {
      /** A replay: the changes after the requested resume revision. */
      readonly kind: "replay";
      /** The matching changes, in revision order. */
      readonly events: CacheEvent[];
      /** The revision the subscriber is consistent with after the replay. */
      readonly revision: number;
    };

/** Options of {@link ConfigCache.subscribe}. */
export interface SubscribeOptions {
  /** Only these services; undefined or empty means every service. */
  readonly services?: ReadonlySet<string>;
  /** Which view to follow. */
  readonly view: CacheView;
  /** Resume after this revision when it can still be replayed; 0 asks for a snapshot. */
  readonly resumeRevision: number;
  /** Receives every later matching change, synchronously, in revision order. */
  readonly onEvents: (events: CacheEvent[]) => void;
  /** Called once when the cache loses the store; the subscription is then over. */
  readonly onClose: (error: Error) => void;
}

/** A live subscription. */
export interface Subscription {
  /** What the subscriber must apply first. */
  readonly initial: InitialSync;
  /** Ends the subscription; idempotent. */
  unsubscribe(): void;
}

/** Counts the cache exposes for metrics and status: the index's, and its subscribers. */
export interface CacheStats extends IndexStats {
  /** Active subscriptions. */
  readonly subscribers: number;
}

/** All the cache needs of the store: to list it, watch it from a revision, and ping it. */
export type CacheStore = Pick<ConfigStore, "list" | "watch" | "ping">;

/** Options of {@link createConfigCache}. */
export interface ConfigCacheOptions {
  /** The store to follow. */
  readonly store: CacheStore;
  /** The import policy for the effective view. */
  readonly policy: ImportPolicy;
  /** Logger; silent by default. */
  readonly logger?: Logger;
  /** How many recent changes are kept for resuming streams; default 10000. */
  readonly historyLimit?: number;
  /** How often the store is pinged to notice a hung connection; default 2000 ms. */
  readonly pingIntervalMs?: number;
  /** First and maximum retry delay after the store was lost; default 200 and 5000 ms. */
  readonly retryMinMs?: number;
  /** See `retryMinMs`. */
  readonly retryMaxMs?: number;
  /** Called for each projection the import policy newly rejects. */
  readonly onRejection?: (rejection: ImportRejection<CachedProjection>) => void;
}

/** The registrar's cache of the shared store. */
export interface ConfigCache {
  /** The current state. */
  readonly state: CacheState;
  /** The store revision the cache is consistent with (0 before the first sync). */
  readonly revision: number;
  /** Why the store is unavailable, while it is (and after a stop while it was). */
  readonly lastError: Error | undefined;
  /** Starts following the store (list, then watch, retrying forever). */
  start(): void;
  /** Resolves once the cache has synced for the first time (or rejects when stopped first). */
  whenSynced(): Promise<void>;
  /**
   * Resolves once the cache has left the `starting` state: it synced, found
   * the store unavailable, or was stopped. Never rejects.
   */
  whenSettled(): Promise<void>;
  /** Stops following the store; subscriptions are closed without an error callback. */
  stop(): Promise<void>;
  /**
   * Subscribes to changes. Throws {@link StoreUnavailableError} while the cache
   * is not synced (callers turn it into UNAVAILABLE).
   */
  subscribe(options: SubscribeOptions): Subscription;
  /**
   * The projections of `services` (every service when undefined or empty) in
   * `view`, by service then origin, and the revision they are the store's
   * state at. Throws {@link StoreUnavailableError} while the cache is not
   * synced. A new subscriber's snapshot is exactly this.
   */
  snapshot(
    services: ReadonlySet<string> | undefined,
    view: CacheView,
  ): { readonly entries: CachedProjection[]; readonly revision: number };
  /** The current counts. */
  stats(): CacheStats;
  /** The rejections currently in force, by service then origin. */
  rejections(): ImportRejection<CachedProjection>[];
  /**
   * The services more than one trusted origin exports, by service: the winner
   * and the trusted losers, best first (see `ProjectionIndex.conflicts`).
   */
  conflicts(): ImportConflict<CachedProjection>[];
  /** Every stored projection of every origin, by service then origin. */
  entries(): CachedProjection[];
}

/**
 * Where the connection to the store is: the public state, and what the phase
 * owns. While following, `synced` owns the store watch and its pinger; while
 * backing off, `unavailable` owns the retry timer; `interrupt` ends either
 * early and releases what it owns (stop() calls it). While the loop lists,
 * the state is the one it had (`starting`; `synced` after a compaction;
 * `unavailable` after a loss), with nothing to interrupt.
 */
type Connection =
  | { readonly state: "starting" }
  | { readonly state: "synced"; readonly interrupt?: () => void }
  | { readonly state: "unavailable"; readonly error: Error; readonly interrupt?: () => void }
  | { readonly state: "stopped"; readonly error: Error | undefined };

interface Subscriber {
  readonly options: SubscribeOptions;
  active: boolean;
}

/** Creates a cache over a store; call `start()` to begin following it. */
export function createConfigCache(options: ConfigCacheOptions): ConfigCache {
  const { store, policy } = options;
  const logger = options.logger ?? createSilentLogger();
  const pingIntervalMs = options.pingIntervalMs ?? 2_000;
  const retryMinMs = options.retryMinMs ?? 200;
  const retryMaxMs = options.retryMaxMs ?? 5_000;

  const index = createProjectionIndex({
    policy,
    onRejection(rejection) {
      const { origin, service } = rejection.candidate;
      logger.warn({ origin, service, reason: rejection.reason }, rejection.message);
      options.onRejection?.(rejection);
    },
  });
  const log = createChangeLog({ limit: options.historyLimit ?? 10_000 });
  const subscribers = new Set<Subscriber>();
  let revision = 0;
  let conn: Connection = { state: "starting" };
  let everSynced = false;
  let loop: Promise<void> | undefined;
  let syncedWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  let settledWaiters: (() => void)[] = [];

  // Read through functions, so that checks after an await see the current value.
  const stopped = (): boolean => conn.state === "stopped";
  const lastError = (): Error | undefined =>
    conn.state === "unavailable" || conn.state === "stopped" ? conn.error : undefined;

  function settle(): void {
    const waiters = settledWaiters;
    settledWaiters = [];
    for (const resolve of waiters) resolve();
  }

  function publish(records: readonly ChangeRecord[]): void {
    if (records.length === 0) return;
    log.remember(records);
    for (const sub of subscribers) {
      if (!sub.active) continue;
      const events = eventsFor(records, sub.options);
      if (events.length === 0) continue;
      try {
        sub.options.onEvents(events);
      } catch (error) {
        logger.error({ err: error }, "watch subscriber failed; closing it");
        sub.active = false;
        subscribers.delete(sub);
      }
    }
  }

  function onStoreEvents(events: StoreEvent[]): void {
    const records = events.map((event) =>
      index.apply(
        event.type === "put" ? { ...event, entry: toCachedProjection(event.entry) } : event,
      ),
    );
    const last = events[events.length - 1];
    if (last !== undefined) revision = Math.max(revision, last.revision);
    publish(records);
  }

  /** Replaces the index with a fresh listing, publishing the difference (stale-then-sweep). */
  function resync(listed: StoredProjection[], listRevision: number): void {
    const entries = listed.map(toCachedProjection);
    const records = index.resync(entries, listRevision);
    revision = Math.max(revision, listRevision);
    if (!everSynced) {
      // A client may resume from the listing's revision having seen only part of
      // a batch written at it: keep that batch's puts replayable (its deletes
      // cannot be known from a listing; the export controller never batches them).
      const atListRevision = entries.filter((entry) => entry.modRevision === listRevision);
      log.restart(
        listRevision,
        atListRevision.map((entry) => index.upsertRecord(entry, listRevision)),
      );
    } else {
      publish(records);
    }
  }

  function closeSubscribers(error: Error | undefined): void {
    const closing = [...subscribers];
    subscribers.clear();
    for (const sub of closing) {
      if (!sub.active) continue;
      sub.active = false;
      if (error !== undefined) sub.options.onClose(error);
    }
  }

  /** Marks the cache synced after a listing and wakes whoever waits for it. */
  function markSynced(): void {
    everSynced = true;
    conn = { state: "synced" };
    settle();
    logger.info({ revision, projections: index.stats().projections }, "config cache synced");
    for (const waiter of syncedWaiters) waiter.resolve();
    syncedWaiters = [];
  }

  /** Marks the store lost: closes the subscribers, which must re-subscribe once it is back. */
  function markUnavailable(error: Error): void {
    if (conn.state === "synced") {
      logger.error({ err: error.message }, "store lost; closing watch streams until it is back");
    }
    conn = { state: "unavailable", error };
    settle();
    closeSubscribers(new StoreUnavailableError(`store unavailable: ${error.message}`));
  }

  /** Waits `ms` before the next attempt; stop() cuts it short. */
  async function backOff(ms: number, error: Error): Promise<void> {
    const wait = wakeableSleep(ms);
    conn = { state: "unavailable", error, interrupt: wait.wake };
    await wait.done;
    if (!stopped()) conn = { state: "unavailable", error };
  }

  /** Follows the store from `from` until the watch fails or the store stops answering pings. */
  function follow(from: number): Promise<Error | undefined> {
    return new Promise((resolve) => {
      let done = false;
      let watch: StoreWatch | undefined;
      let pinger: NodeJS.Timeout | undefined;
      const finish = (error: Error | undefined) => {
        if (done) return;
        done = true;
        if (pinger !== undefined) clearInterval(pinger);
        void watch?.cancel().catch(() => undefined);
        resolve(error);
      };
      conn = { state: "synced", interrupt: () => finish(undefined) };
      watch = store.watch(from, {
        onEvents: (events) => {
          if (!done) onStoreEvents(events);
        },
        onError: (error) => finish(error),
      });
      if (done) {
        // The watch failed before it returned: release it, and start no pinger.
        void watch.cancel().catch(() => undefined);
        return;
      }
      let pinging = false;
      pinger = setInterval(() => {
        if (pinging || done) return;
        pinging = true;
        store.ping().then(
          () => {
            pinging = false;
          },
          (error: unknown) => {
            pinging = false;
            finish(error instanceof Error ? error : new StoreUnavailableError(String(error)));
          },
        );
      }, pingIntervalMs);
      pinger.unref?.();
    });
  }

  async function run(): Promise<void> {
    let delay = retryMinMs;
    while (!stopped()) {
      let error: Error | undefined;
      try {
        const listing = await store.list();
        if (stopped()) return;
        resync(listing.entries, listing.revision);
        markSynced();
        delay = retryMinMs;
        error = await follow(listing.revision);
      } catch (caught) {
        error = caught instanceof Error ? caught : new Error(String(caught));
      }
      if (stopped()) return;
      if (error === undefined) continue;
      if (error.name === "StoreCompactedError") {
        // The store compacted past our watch position: re-list without dropping anyone.
        logger.warn({ err: error.message }, "store watch compacted; re-listing");
        if (conn.state === "synced") conn = { state: "synced" };
        continue;
      }
      markUnavailable(error);
      await backOff(delay / 2 + Math.random() * (delay / 2), error);
      delay = Math.min(retryMaxMs, delay * 2);
    }
  }

  /** Throws {@link StoreUnavailableError} unless the cache is synced. */
  const checkSynced = (): void => {
    if (conn.state === "synced") return;
    const error = lastError();
    throw new StoreUnavailableError(
      error === undefined
        ? "the registrar has not synced with the store yet"
        : `store unavailable: ${error.message}`,
    );
  };

  /** See {@link ConfigCache.snapshot}. */
  const snapshot: ConfigCache["snapshot"] = (services, view) => {
    checkSynced();
    return { entries: index.snapshot(services, view), revision };
  };

  return {
    get state() {
      return conn.state;
    },
    get revision() {
      return revision;
    },
    get lastError() {
      return lastError();
    },
    start() {
      if (loop !== undefined || stopped()) return;
      loop = run().catch((error: unknown) => {
        logger.error({ err: error }, "config cache loop failed");
      });
    },
    whenSynced() {
      if (everSynced) return Promise.resolve();
      if (stopped()) return Promise.reject(new Error("config cache stopped"));
      return new Promise((resolve, reject) => syncedWaiters.push({ resolve, reject }));
    },
    whenSettled() {
      if (conn.state !== "starting") return Promise.resolve();
      return new Promise((resolve) => settledWaiters.push(resolve));
    },
    async stop() {
      const interrupt =
        conn.state === "synced" || conn.state === "unavailable" ? conn.interrupt : undefined;
      conn = { state: "stopped", error: lastError() };
      settle();
      interrupt?.();
      await loop;
      closeSubscribers(undefined);
      for (const waiter of syncedWaiters) waiter.reject(new Error("config cache stopped"));
      syncedWaiters = [];
    },
    snapshot,
    subscribe(subscribeOptions) {
      checkSynced();
      const sub: Subscriber = { options: subscribeOptions, active: true };
      const resume = subscribeOptions.resumeRevision;
      const initial: InitialSync = log.canReplay(resume, revision)
        ? { kind: "replay", events: eventsFor(log.recordsToReplay(resume), sub.options), revision }
        : { kind: "snapshot", ...snapshot(subscribeOptions.services, subscribeOptions.view) };
      subscribers.add(sub);
      return {
        initial,
        unsubscribe() {
          sub.active = false;
          subscribers.delete(sub);
        },
      };
    },
    stats() {
      return { ...index.stats(), subscribers: subscribers.size };
    },
    rejections: () => index.rejections(),
    conflicts: () => index.conflicts(),
    entries: () => index.entries(),
  };
}
