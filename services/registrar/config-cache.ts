/**
 * The registrar's versioned view of the shared store: one list-then-watch of
 * every origin's projections, kept in memory, with the import policy applied,
 * and a bounded log of recent changes so that watch streams can resume. Watch
 * streams are served from this cache only (one store watch however many
 * streams), in the manner of go-control-plane's snapshot cache and Cilium's
 * kvstore watch store: list, then watch, an explicit synced state, and a
 * re-list that sweeps stale entries after the store was lost.
 */
import type {
  ImportPolicy,
  ImportRejection,
  ImportRejectionReason,
} from "../common/import-policy.js";
import { createSilentLogger, type Logger } from "./logger.js";
import {
  type ConfigStore,
  type StoredProjection,
  type StoreEvent,
  StoreUnavailableError,
  type StoreWatch,
} from "./store/config-store.js";

/** Which projections a subscriber sees: every origin's, or one winner per service. */
export type CacheView = "effective" | "all";

/** One change as the cache reports it to subscribers. */
export interface CacheEvent {
  /** `upsert` (created or changed) or `delete`. */
  readonly type: "upsert" | "delete";
  /** The origin of the projection the event is about. */
  readonly origin: string;
  /** The service the event is about. */
  readonly service: string;
  /** The projection (upsert only). */
  readonly entry?: StoredProjection;
  /** The store revision of the change. */
  readonly revision: number;
}

/** The state of the cache. */
export type CacheState = "starting" | "synced" | "unavailable" | "stopped";

/** What a new subscriber gets first. */
export type InitialSync =
  | {
      /** A full snapshot: the subscriber replaces its state with `entries`. */
      readonly kind: "snapshot";
      /** The matching projections, by service then origin. */
      readonly entries: StoredProjection[];
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

/** Counts the cache exposes for metrics and status. */
export interface CacheStats {
  /** Stored projections of every origin. */
  readonly projections: number;
  /** Services with an effective (trusted, winning) projection. */
  readonly effectiveServices: number;
  /** Services that more than one trusted origin exports. */
  readonly conflicts: number;
  /** Projections currently rejected by the import policy, by reason. */
  readonly rejected: ReadonlyMap<ImportRejectionReason, number>;
  /** Active subscriptions. */
  readonly subscribers: number;
}

/** Options of {@link createConfigCache}. */
export interface ConfigCacheOptions {
  /** The store to follow. */
  readonly store: ConfigStore;
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
  readonly onRejection?: (rejection: ImportRejection<StoredProjection>) => void;
}

/** The registrar's cache of the shared store. */
export interface ConfigCache {
  /** The current state. */
  readonly state: CacheState;
  /** The store revision the cache is consistent with (0 before the first sync). */
  readonly revision: number;
  /** Why the store is unavailable, while it is. */
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
  /** The current counts. */
  stats(): CacheStats;
  /** The rejections currently in force, by service then origin. */
  rejections(): ImportRejection<StoredProjection>[];
  /** Every stored projection of every origin, by service then origin. */
  entries(): StoredProjection[];
}

interface ChangeRecord {
  readonly revision: number;
  readonly raw: CacheEvent;
  readonly effective: CacheEvent | undefined;
}

interface Subscriber {
  readonly options: SubscribeOptions;
  active: boolean;
}

const entryKey = (origin: string, service: string) => `${origin}\u0000${service}`;

function byServiceThenOrigin(a: StoredProjection, b: StoredProjection): number {
  if (a.service !== b.service) return a.service < b.service ? -1 : 1;
  return a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : 0;
}

/** Creates a cache over a store; call `start()` to begin following it. */
export function createConfigCache(options: ConfigCacheOptions): ConfigCache {
  const { store, policy } = options;
  const logger = options.logger ?? createSilentLogger();
  const historyLimit = options.historyLimit ?? 10_000;
  const pingIntervalMs = options.pingIntervalMs ?? 2_000;
  const retryMinMs = options.retryMinMs ?? 200;
  const retryMaxMs = options.retryMaxMs ?? 5_000;

  const all = new Map<string, StoredProjection>();
  const byService = new Map<string, Map<string, StoredProjection>>();
  const effective = new Map<string, StoredProjection>();
  const rejected = new Map<string, ImportRejection<StoredProjection>>();
  const subscribers = new Set<Subscriber>();
  let history: ChangeRecord[] = [];
  /** Every change after this revision is in `history`. */
  let replayFrom = 0;
  let revision = 0;
  let state: CacheState = "starting";
  let lastError: Error | undefined;
  let everSynced = false;
  let running = false;
  let wake: (() => void) | undefined;
  let loop: Promise<void> | undefined;
  let syncedWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  let settledWaiters: (() => void)[] = [];

  function settle(): void {
    const waiters = settledWaiters;
    settledWaiters = [];
    for (const resolve of waiters) resolve();
  }

  function recordRejection(entry: StoredProjection): void {
    const key = entryKey(entry.origin, entry.service);
    const rejection = policy.check(entry);
    if (rejection === undefined) {
      rejected.delete(key);
      return;
    }
    const previous = rejected.get(key);
    rejected.set(key, rejection);
    if (previous?.candidate.modRevision !== entry.modRevision) {
      logger.warn(
        { origin: entry.origin, service: entry.service, reason: rejection.reason },
        rejection.message,
      );
      options.onRejection?.(rejection);
    }
  }

  function winnerOf(service: string): StoredProjection | undefined {
    const candidates = byService.get(service);
    if (candidates === undefined) return undefined;
    let best: StoredProjection | undefined;
    for (const candidate of candidates.values()) {
      if (rejected.has(entryKey(candidate.origin, candidate.service))) continue;
      if (best === undefined || policy.compare(candidate, best) < 0) best = candidate;
    }
    return best;
  }

  /** Applies one change to the maps; returns the record of what subscribers see. */
  function apply(event: StoreEvent): ChangeRecord {
    const origin = event.type === "put" ? event.entry.origin : event.origin;
    const service = event.type === "put" ? event.entry.service : event.service;
    const key = entryKey(origin, service);
    let raw: CacheEvent;
    if (event.type === "put") {
      all.set(key, event.entry);
      let perOrigin = byService.get(service);
      if (perOrigin === undefined) {
        perOrigin = new Map();
        byService.set(service, perOrigin);
      }
      perOrigin.set(origin, event.entry);
      recordRejection(event.entry);
      raw = { type: "upsert", origin, service, entry: event.entry, revision: event.revision };
    } else {
      all.delete(key);
      rejected.delete(key);
      const perOrigin = byService.get(service);
      perOrigin?.delete(origin);
      if (perOrigin?.size === 0) byService.delete(service);
      raw = { type: "delete", origin, service, revision: event.revision };
    }
    const before = effective.get(service);
    const after = winnerOf(service);
    let effectiveEvent: CacheEvent | undefined;
    if (after === undefined) {
      if (before !== undefined) {
        effective.delete(service);
        effectiveEvent = {
          type: "delete",
          origin: before.origin,
          service,
          revision: event.revision,
        };
      }
    } else if (before !== after) {
      effective.set(service, after);
      effectiveEvent = {
        type: "upsert",
        origin: after.origin,
        service,
        entry: after,
        revision: event.revision,
      };
    }
    return { revision: event.revision, raw, effective: effectiveEvent };
  }

  function remember(records: ChangeRecord[]): void {
    history.push(...records);
    if (history.length > historyLimit * 2) {
      const dropped = history.length - historyLimit;
      replayFrom = Math.max(replayFrom, (history[dropped - 1] as ChangeRecord).revision);
      history = history.slice(dropped);
    }
  }

  function matches(sub: Subscriber, event: CacheEvent): boolean {
    const services = sub.options.services;
    return services === undefined || services.size === 0 || services.has(event.service);
  }

  function eventsFor(sub: Subscriber, records: readonly ChangeRecord[]): CacheEvent[] {
    const out: CacheEvent[] = [];
    for (const record of records) {
      const event = sub.options.view === "all" ? record.raw : record.effective;
      if (event !== undefined && matches(sub, event)) out.push(event);
    }
    return out;
  }

  function publish(records: ChangeRecord[]): void {
    if (records.length === 0) return;
    remember(records);
    for (const sub of subscribers) {
      if (!sub.active) continue;
      const events = eventsFor(sub, records);
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
    const records = events.map(apply);
    const last = events[events.length - 1];
    if (last !== undefined) revision = Math.max(revision, last.revision);
    publish(records);
  }

  /** Replaces the maps with a fresh listing, publishing the difference (stale-then-sweep). */
  function resync(entries: StoredProjection[], listRevision: number): void {
    const records: ChangeRecord[] = [];
    const seen = new Set<string>();
    for (const entry of entries) {
      const key = entryKey(entry.origin, entry.service);
      seen.add(key);
      if (all.get(key)?.modRevision === entry.modRevision) continue;
      records.push(apply({ type: "put", entry, revision: listRevision }));
    }
    for (const [key, stale] of [...all]) {
      if (seen.has(key)) continue;
      records.push(
        apply({
          type: "delete",
          origin: stale.origin,
          service: stale.service,
          revision: listRevision,
        }),
      );
    }
    revision = Math.max(revision, listRevision);
    if (!everSynced) {
      replayFrom = listRevision;
      remember([]);
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

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
    });
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
        wake = undefined;
        void watch?.cancel().catch(() => undefined);
        resolve(error);
      };
      wake = () => finish(undefined);
      watch = store.watch(from, {
        onEvents: (events) => {
          if (!done) onStoreEvents(events);
        },
        onError: (error) => finish(error),
      });
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
    while (running) {
      let error: Error | undefined;
      try {
        const listing = await store.list();
        if (!running) return;
        resync(listing.entries, listing.revision);
        everSynced = true;
        state = "synced";
        settle();
        lastError = undefined;
        delay = retryMinMs;
        logger.info({ revision: revision, projections: all.size }, "config cache synced");
        for (const waiter of syncedWaiters) waiter.resolve();
        syncedWaiters = [];
        error = await follow(listing.revision);
      } catch (caught) {
        error = caught instanceof Error ? caught : new Error(String(caught));
      }
      if (!running) return;
      if (error === undefined) continue;
      if (error.name === "StoreCompactedError") {
        // The store compacted past our watch position: re-list without dropping anyone.
        logger.warn({ err: error.message }, "store watch compacted; re-listing");
        continue;
      }
      if (state === "synced") {
        logger.error({ err: error.message }, "store lost; closing watch streams until it is back");
      }
      state = "unavailable";
      lastError = error;
      settle();
      closeSubscribers(new StoreUnavailableError(`store unavailable: ${error.message}`));
      const jittered = delay / 2 + Math.random() * (delay / 2);
      await sleep(jittered);
      delay = Math.min(retryMaxMs, delay * 2);
    }
  }

  return {
    get state() {
      return state;
    },
    get revision() {
      return revision;
    },
    get lastError() {
      return lastError;
    },
    start() {
      if (running || state === "stopped") return;
      running = true;
      loop = run().catch((error: unknown) => {
        logger.error({ err: error }, "config cache loop failed");
      });
    },
    whenSynced() {
      if (everSynced) return Promise.resolve();
      if (state === "stopped") return Promise.reject(new Error("config cache stopped"));
      return new Promise((resolve, reject) => syncedWaiters.push({ resolve, reject }));
    },
    whenSettled() {
      if (state !== "starting") return Promise.resolve();
      return new Promise((resolve) => settledWaiters.push(resolve));
    },
    async stop() {
      running = false;
      state = "stopped";
      settle();
      wake?.();
      await loop;
      closeSubscribers(undefined);
      for (const waiter of syncedWaiters) waiter.reject(new Error("config cache stopped"));
      syncedWaiters = [];
    },
    subscribe(subscribeOptions) {
      if (state !== "synced") {
        throw new StoreUnavailableError(
          lastError === undefined
            ? "the registrar has not synced with the store yet"
            : `store unavailable: ${lastError.message}`,
        );
      }
      const sub: Subscriber = { options: subscribeOptions, active: true };
      const resume = subscribeOptions.resumeRevision;
      let initial: InitialSync;
      if (resume > 0 && resume >= replayFrom && resume <= revision) {
        const start = history.findIndex((record) => record.revision > resume);
        const records = start < 0 ? [] : history.slice(start);
        initial = { kind: "replay", events: eventsFor(sub, records), revision };
      } else {
        const source = subscribeOptions.view === "all" ? all.values() : effective.values();
        const services = subscribeOptions.services;
        const entries: StoredProjection[] = [];
        if (services !== undefined && services.size > 0 && subscribeOptions.view === "effective") {
          for (const service of services) {
            const entry = effective.get(service);
            if (entry !== undefined) entries.push(entry);
          }
        } else {
          for (const entry of source) {
            if (services === undefined || services.size === 0 || services.has(entry.service)) {
              entries.push(entry);
            }
          }
        }
        entries.sort(byServiceThenOrigin);
        initial = { kind: "snapshot", entries, revision };
      }
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
      const counts = new Map<ImportRejectionReason, number>();
      for (const rejection of rejected.values()) {
        counts.set(rejection.reason, (counts.get(rejection.reason) ?? 0) + 1);
      }
      let conflicts = 0;
      for (const [service, perOrigin] of byService) {
        let trusted = 0;
        for (const origin of perOrigin.keys()) {
          if (!rejected.has(entryKey(origin, service))) trusted++;
        }
        if (trusted > 1) conflicts++;
      }
      return {
        projections: all.size,
        effectiveServices: effective.size,
        conflicts,
        rejected: counts,
        subscribers: subscribers.size,
      };
    },
    rejections() {
      return [...rejected.values()].sort((a, b) => byServiceThenOrigin(a.candidate, b.candidate));
    },
    entries() {
      return [...all.values()].sort(byServiceThenOrigin);
    },
  };
}
