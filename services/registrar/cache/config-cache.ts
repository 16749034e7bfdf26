/**
 * The registrar's versioned view of the shared store: one list-then-watch of
 * every origin's projections, kept in memory, with the import policy applied,
 * and a bounded log of recent changes so that watch streams can resume. Watch
 * streams are served from this cache only (one store watch however many
 * streams), in the manner of go-control-plane's snapshot cache and Cilium's
 * kvstore watch store: list, then watch, an explicit synced state, and a
 * re-list that sweeps stale entries after the store was lost.
 *
 * A store loss keeps the subscribers: they keep the last synced view (AP,
 * like the agents' last-known caches), new ones are served it too, and the
 * re-listing once the store is back reaches them as ordinary changes
 * (stale-then-sweep), so an outage costs no reconnect storm and no
 * re-snapshot. Only the first sync must come from a store that answers.
 *
 * This file is the shell: the connect loop (list, then follow the store with
 * `store-follow.ts`, back off after a loss), the state and its waiters. What
 * it holds is synchronous and timer-free (`cache-contents.ts`): the projection
 * index (`projection-index.ts`), the change log (`change-log.ts`) and the
 * subscribers (`cache-subscribers.ts`).
 */
import type { MassDeleteThreshold } from "../../common/import-loss.js";
import type { ImportConflict, ImportPolicy, ImportRejection } from "../../common/import-policy.js";
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import { wakeableSleep } from "../../runtime/sleep.js";
import { createSyncGate } from "../../runtime/sync-gate.js";
import {
  type ConfigStore,
  type StoredProjection,
  StoreUnavailableError,
} from "../store/config-store.js";
import { type CacheContents, createCacheContents, type InitialSync } from "./cache-contents.js";
import type { CachedProjection } from "./cached-projection.js";
import type { DeleteHold } from "./delete-holds.js";
import type { ImportObserver } from "./import-guard.js";
import type { CacheEvent, CacheView, IndexStats } from "./projection-index.js";
import { followStore } from "./store-follow.js";

export type { InitialSync } from "./cache-contents.js";
export { type CachedProjection, decodeCachedProjection } from "./cached-projection.js";
export type { DeleteHold } from "./delete-holds.js";
export type { ImportObserver } from "./import-guard.js";
export type { CacheEvent, CacheView } from "./projection-index.js";

/** The state of the cache. */
export type CacheState = "starting" | "synced" | "unavailable" | "stopped";

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
  /**
   * Called once if the cache closes the subscription with an error (a
   * failing subscriber); the subscription is then over. A store loss does
   * not close subscriptions, and a stop closes them without a call.
   */
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
  /** When an origin's deletes that arrive together are held; default more than 50% and at least 3. */
  readonly massDelete?: MassDeleteThreshold;
  /** Where applied deletes are counted. */
  readonly importObserver?: ImportObserver;
}

/** The registrar's cache of the shared store. */
export interface ConfigCache {
  /** The current state. */
  readonly state: CacheState;
  /** The store revision the cache is consistent with (0 before the first sync). */
  readonly revision: number;
  /** Why the store is unavailable, while it is (and after a stop while it was). */
  readonly lastError: Error | undefined;
  /**
   * Whether {@link ConfigCache.subscribe} serves: while synced, and while the
   * store is unavailable after a first sync (the view retained through the
   * loss, at `revision`). False before the first sync and after a stop.
   */
  readonly serving: boolean;
  /**
   * Calls `listener` each time the store is lost after a sync (`true`) and
   * each time it is back (`false`, once the re-listing's differences were
   * published), after the state changed; returns what removes it. Nothing
   * else changes then for an idle stream, so this is how a stream can tell
   * its client at once rather than at its next keep-alive.
   */
  onStoreAvailability(listener: (storeUnavailable: boolean) => void): () => void;
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
   * Subscribes to changes. Throws {@link StoreUnavailableError} unless the
   * cache is {@link ConfigCache.serving} (callers turn it into UNAVAILABLE).
   * A subscription lives through a store loss: it keeps the last synced view,
   * and once the store is back the re-listing's differences reach it as
   * ordinary events. Only a stop ends it from this side.
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
  ): { readonly entries: readonly CachedProjection[]; readonly revision: number };
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
  /**
   * The held deletes in force, by origin: mass disappearances of an
   * origin's projections, still served (see `delete-holds.ts`).
   */
  holds(): DeleteHold[];
  /**
   * Releases the held deletes of `origin` (every origin when undefined): they
   * are applied and published now. Returns how many deletes were applied.
   */
  releaseHolds(origin?: string): number;
  /**
   * Judges again the puts refused for their signature, after the origins'
   * keys changed: those now accepted are applied and published. Returns how
   * many were applied (see `CacheContents.readmit`).
   */
  readmit(): number;
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

/** Whether a cache in `conn` serves subscribers: synced, or unavailable after a first sync. */
function servesRetained(conn: Connection, everSynced: boolean): boolean {
  return conn.state === "synced" || (conn.state === "unavailable" && everSynced);
}

/** The error of a call the cache cannot serve, given why the store is unavailable (if known). */
function notServing(error: Error | undefined): StoreUnavailableError {
  return new StoreUnavailableError(
    error === undefined
      ? "the registrar has not synced with the store yet"
      : `store unavailable: ${error.message}`,
  );
}

/** The options of the cache's contents, from the cache's. */
function contentsOptions(options: ConfigCacheOptions, logger: Logger) {
  return {
    policy: options.policy,
    historyLimit: options.historyLimit ?? 10_000,
    logger,
    ...(options.onRejection === undefined ? {} : { onRejection: options.onRejection }),
    ...(options.massDelete === undefined ? {} : { massDelete: options.massDelete }),
    ...(options.importObserver === undefined ? {} : { importObserver: options.importObserver }),
  };
}

/** Creates a cache over a store; call `start()` to begin following it. */
export function createConfigCache(options: ConfigCacheOptions): ConfigCache {
  const { store } = options;
  const logger = options.logger ?? createSilentLogger();
  const pingIntervalMs = options.pingIntervalMs ?? 2_000;
  const retryMinMs = options.retryMinMs ?? 200;
  const retryMaxMs = options.retryMaxMs ?? 5_000;
  const contents = createCacheContents(contentsOptions(options, logger));
  const { index } = contents;
  let conn: Connection = { state: "starting" };
  let loop: Promise<void> | undefined;
  /** Opened by the first sync; failed by a stop before it. */
  const synced = createSyncGate();
  /** Opened when the cache leaves `starting` (synced, store unavailable, or stopped). */
  const settled = createSyncGate();

  // Read through functions, so that checks after an await see the current value.
  const stopped = (): boolean => conn.state === "stopped";
  const lastError = (): Error | undefined =>
    conn.state === "unavailable" || conn.state === "stopped" ? conn.error : undefined;

  const availability = createAvailabilityListeners(logger);
  /** Takes a listing in (stale-then-sweep), marks the cache synced and wakes whoever waits. */
  function onListed(listing: { entries: StoredProjection[]; revision: number }): void {
    const recovered = conn.state === "unavailable" && synced.synced;
    contents.resync(listing.entries, listing.revision, !synced.synced);
    conn = { state: "synced" };
    settled.open();
    logger.info(
      { revision: contents.revision, projections: index.stats().projections },
      "config cache synced",
    );
    synced.open();
    if (recovered) availability.announce(false);
  }

  /** Marks the store lost; the subscribers stay (see the module comment). */
  function markUnavailable(error: Error): void {
    const lost = conn.state === "synced";
    if (lost) {
      logger.error(
        { err: error.message, revision: contents.revision, subscribers: contents.subscribers },
        "store lost; watch streams keep the last synced view until it is back",
      );
    }
    conn = { state: "unavailable", error };
    settled.open();
    if (lost) availability.announce(true);
  }

  /** Waits `ms` before the next attempt; stop() cuts it short. */
  async function backOff(ms: number, error: Error): Promise<void> {
    const wait = wakeableSleep(ms);
    conn = { state: "unavailable", error, interrupt: wait.wake };
    await wait.done;
    if (!stopped()) conn = { state: "unavailable", error };
  }

  /**
   * Lists, takes the listing in and resolves with its revision (undefined if stopped). Apart
   * from `run`, whose suspended frame kept the listing (decoded: 60 MB at 10k services) alive.
   */
  async function listAndSync(): Promise<number | undefined> {
    const listing = await store.list();
    if (stopped()) return undefined;
    onListed(listing);
    return listing.revision;
  }

  /** Lists, then follows (see {@link followStore}), until stopped; backs off after a loss. */
  async function run(): Promise<void> {
    let delay = retryMinMs;
    while (!stopped()) {
      let error: Error | undefined;
      try {
        const revision = await listAndSync();
        // stop() may have run in the tick between: it found nothing to interrupt yet.
        if (revision === undefined || stopped()) return;
        delay = retryMinMs;
        error = await followStore(store, revision, {
          pingIntervalMs,
          onEvents: (events) => contents.applyEvents(events),
          onInterruptible: (interrupt) => {
            conn = { state: "synced", interrupt };
          },
          onExcused: (error, busy) => {
            logger.warn(
              { err: error.message, eventLoopUtilization: Number(busy.toFixed(2)) },
              "store ping failed while this process was busy; pinging again before judging the store",
            );
          },
        });
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

  /** Whether subscribe() serves: synced, or unavailable with the view of an earlier sync. */
  const serving = (): boolean => servesRetained(conn, synced.synced);

  /** Throws {@link StoreUnavailableError} unless the cache is synced (or `retained` allows the view kept through a loss). */
  const checkSynced = (retained = false): void => {
    if (conn.state !== "synced" && !(retained && serving())) throw notServing(lastError());
  };

  return {
    get state() {
      return conn.state;
    },
    get revision() {
      return contents.revision;
    },
    get lastError() {
      return lastError();
    },
    onStoreAvailability: availability.add,
    start() {
      if (loop !== undefined || stopped()) return;
      loop = run().catch((error: unknown) => {
        logger.error({ err: error }, "config cache loop failed");
      });
    },
    whenSynced: () => synced.wait(),
    whenSettled: () => settled.wait(),
    async stop() {
      const interrupt =
        conn.state === "synced" || conn.state === "unavailable" ? conn.interrupt : undefined;
      conn = { state: "stopped", error: lastError() };
      settled.open();
      interrupt?.();
      await loop;
      contents.closeSubscribers(undefined);
      synced.fail(new Error("config cache stopped"));
    },
    snapshot(services, view) {
      checkSynced();
      return { entries: contents.snapshot(services, view), revision: contents.revision };
    },
    get serving() {
      return serving();
    },
    subscribe(subscribeOptions) {
      checkSynced(true);
      return contents.subscribe(subscribeOptions);
    },
    ...contentsReads(contents),
  };
}

/** What the cache answers straight from its contents, whatever its state. */
function contentsReads(
  contents: CacheContents,
): Pick<
  ConfigCache,
  "stats" | "rejections" | "conflicts" | "entries" | "holds" | "releaseHolds" | "readmit"
> {
  const { index } = contents;
  return {
    stats: () => ({ ...index.stats(), subscribers: contents.subscribers }),
    rejections: () => index.rejections(),
    conflicts: () => index.conflicts(),
    entries: () => index.entries(),
    holds: () => contents.holds(),
    releaseHolds: (origin) => contents.releaseHolds(origin),
    readmit: () => contents.readmit(),
  };
}

/**
 * The listeners of {@link ConfigCache.onStoreAvailability}: `add` returns
 * what removes one; `announce` calls each, and one that throws is logged,
 * never stops the cache or the others.
 */
function createAvailabilityListeners(logger: Logger) {
  const listeners = new Set<(storeUnavailable: boolean) => void>();
  return {
    add(listener: (storeUnavailable: boolean) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    announce(storeUnavailable: boolean): void {
      for (const listener of listeners) {
        try {
          listener(storeUnavailable);
        } catch (error) {
          logger.error({ err: error }, "a store availability listener failed");
        }
      }
    },
  };
}
