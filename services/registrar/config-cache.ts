/**
 * The registrar's versioned view of the shared store: one list-then-watch of
 * every origin's projections, kept in memory, with the import policy applied,
 * and a bounded log of recent changes so that watch streams can resume. Watch
 * streams are served from this cache only (one store watch however many
 * streams), in the manner of go-control-plane's snapshot cache and Cilium's
 * kvstore watch store: list, then watch, an explicit synced state, and a
 * re-list that sweeps stale entries after the store was lost.
 */
import { fromBinary } from "@bufbuild/protobuf";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type {
  ImportPolicy,
  ImportRejection,
  ImportRejectionReason,
  ProjectionHeader,
} from "../common/import-policy.js";
import { createSilentLogger, type Logger } from "../runtime/logger.js";
import { wakeableSleep } from "../runtime/sleep.js";
import {
  type ConfigStore,
  type StoredProjection,
  type StoreEvent,
  StoreUnavailableError,
  type StoreWatch,
} from "./store/config-store.js";

/**
 * What the cache keeps of one stored projection: the origin and service of its
 * key, its revision, the projection's service and version (all the import
 * policy reads) and its binary encoding. The message itself is not kept
 * (decoded, it takes some fifteen times the memory of its encoding): a
 * consumer that needs it decodes `value` ({@link decodeCachedProjection}), and
 * one that sends protobuf binary sends `value` as it is.
 */
export interface CachedProjection {
  /** The origin cluster, from the key path. */
  readonly origin: string;
  /** The service (`namespace/name`), from the key path. */
  readonly service: string;
  /** The projection's service (equal to `service`) and version. */
  readonly projection: ProjectionHeader;
  /** The projection's binary encoding, `originCluster` stamped from the key. */
  readonly value: Uint8Array;
  /** The store revision at which the value was last written. */
  readonly modRevision: number;
}

/** Decodes the projection a cache entry holds (its value decoded when the store read it). */
export function decodeCachedProjection(entry: CachedProjection): ServiceConfigProjection {
  return fromBinary(ServiceConfigProjectionSchema, entry.value);
}

/** What the cache keeps of a stored projection (see {@link CachedProjection}). */
function toCached(entry: StoredProjection): CachedProjection {
  return {
    origin: entry.origin,
    service: entry.service,
    projection: { service: entry.service, version: entry.version },
    value: entry.value,
    modRevision: entry.modRevision,
  };
}

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
  readonly entry?: CachedProjection;
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
  readonly onRejection?: (rejection: ImportRejection<CachedProjection>) => void;
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
  /** Every stored projection of every origin, by service then origin. */
  entries(): CachedProjection[];
}

/** A change the cache applies: a store event with the entry in the cache's form. */
type CacheChange =
  | { readonly type: "put"; readonly entry: CachedProjection; readonly revision: number }
  | {
      readonly type: "delete";
      readonly origin: string;
      readonly service: string;
      readonly revision: number;
    };

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

/** The index of the first record with a revision at or above `revision` (records are in revision order). */
function lowerBoundRevision(records: readonly ChangeRecord[], revision: number): number {
  let low = 0;
  let high = records.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((records[mid] as ChangeRecord).revision < revision) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The upsert event of `entry` at `revision`. */
function upsertOf(entry: CachedProjection, revision: number): CacheEvent {
  return { type: "upsert", origin: entry.origin, service: entry.service, entry, revision };
}

function byServiceThenOrigin(a: CachedProjection, b: CachedProjection): number {
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

  const all = new Map<string, CachedProjection>();
  const byService = new Map<string, Map<string, CachedProjection>>();
  const effective = new Map<string, CachedProjection>();
  const rejected = new Map<string, ImportRejection<CachedProjection>>();
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

  function recordRejection(entry: CachedProjection): void {
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

  function winnerOf(service: string): CachedProjection | undefined {
    const candidates = byService.get(service);
    if (candidates === undefined) return undefined;
    let best: CachedProjection | undefined;
    for (const candidate of candidates.values()) {
      if (rejected.has(entryKey(candidate.origin, candidate.service))) continue;
      if (best === undefined || policy.compare(candidate, best) < 0) best = candidate;
    }
    return best;
  }

  /** Applies one change to the maps; returns the record of what subscribers see. */
  function apply(event: CacheChange): ChangeRecord {
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

  /**
   * Appends to the history and trims it to `historyLimit` records once it has
   * twice that many. A trim never splits a revision: the records of one
   * revision (a batched write, a re-list) are kept or dropped together, so a
   * replay from a revision in the history can always send all of it.
   */
  function remember(records: ChangeRecord[]): void {
    history.push(...records);
    if (history.length > historyLimit * 2) {
      let dropped = history.length - historyLimit;
      const kept = (history[dropped] as ChangeRecord).revision;
      while (dropped > 0 && (history[dropped - 1] as ChangeRecord).revision === kept) dropped--;
      if (dropped === 0) return;
      replayFrom = Math.max(replayFrom, (history[dropped - 1] as ChangeRecord).revision);
      history = history.slice(dropped);
    }
  }

  /**
   * Returns the records a subscriber resuming after `resume` must apply: every
   * record after it, and also the records of `resume` itself when that
   * revision holds several (a batched write or a re-list). A client resumes
   * from the revision of the last event it applied, and a stream may have
   * ended between two events of one revision; sending the whole revision again
   * is harmless, since applying an upsert or a delete twice changes nothing.
   */
  function recordsToReplay(resume: number): ChangeRecord[] {
    let start = lowerBoundRevision(history, resume);
    const atResume = lowerBoundRevision(history, resume + 1) - start;
    if (atResume < 2) start += atResume;
    return history.slice(start);
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
    const records = events.map((event) =>
      apply(event.type === "put" ? { ...event, entry: toCached(event.entry) } : event),
    );
    const last = events[events.length - 1];
    if (last !== undefined) revision = Math.max(revision, last.revision);
    publish(records);
  }

  /** Replaces the maps with a fresh listing, publishing the difference (stale-then-sweep). */
  function resync(listed: StoredProjection[], listRevision: number): void {
    const records: ChangeRecord[] = [];
    const seen = new Set<string>();
    const entries = listed.map(toCached);
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
      // A client may resume from the listing's revision having seen only part of
      // a batch written at it: keep that batch's puts replayable (its deletes
      // cannot be known from a listing; the export controller never batches them).
      const atListRevision = entries.filter((entry) => entry.modRevision === listRevision);
      replayFrom = listRevision;
      remember(
        atListRevision.length < 2
          ? []
          : atListRevision.map((entry) => ({
              revision: listRevision,
              raw: upsertOf(entry, listRevision),
              effective:
                effective.get(entry.service) === entry ? upsertOf(entry, listRevision) : undefined,
            })),
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

  function sleep(ms: number): Promise<void> {
    const wait = wakeableSleep(ms);
    wake = wait.wake;
    return wait.done.finally(() => {
      wake = undefined;
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

  /** See {@link ConfigCache.snapshot}. */
  const snapshot: ConfigCache["snapshot"] = (services, view) => {
    checkSynced();
    const entries: CachedProjection[] = [];
    if (services === undefined || services.size === 0) {
      for (const entry of view === "all" ? all.values() : effective.values()) entries.push(entry);
    } else {
      // Through the per-service indexes: a filtered snapshot costs what it returns.
      for (const service of services) {
        if (view === "effective") {
          const entry = effective.get(service);
          if (entry !== undefined) entries.push(entry);
        } else {
          for (const entry of byService.get(service)?.values() ?? []) entries.push(entry);
        }
      }
    }
    entries.sort(byServiceThenOrigin);
    return { entries, revision };
  };

  /** Throws {@link StoreUnavailableError} unless the cache is synced. */
  const checkSynced = (): void => {
    if (state === "synced") return;
    throw new StoreUnavailableError(
      lastError === undefined
        ? "the registrar has not synced with the store yet"
        : `store unavailable: ${lastError.message}`,
    );
  };

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
    snapshot,
    subscribe(subscribeOptions) {
      checkSynced();
      const sub: Subscriber = { options: subscribeOptions, active: true };
      const resume = subscribeOptions.resumeRevision;
      const initial: InitialSync =
        resume > 0 && resume >= replayFrom && resume <= revision
          ? { kind: "replay", events: eventsFor(sub, recordsToReplay(resume)), revision }
          : {
              kind: "snapshot",
              ...snapshot(subscribeOptions.services, subscribeOptions.view),
            };
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
