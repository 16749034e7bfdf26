/**
 * What the config cache holds, apart from how it follows the store: the
 * projection index, the change log and the subscribers, and the revision they
 * are consistent with. Synchronous and timer-free (the shell in
 * `config-cache.ts` owns the store connection): a batch of store events or a
 * re-listing goes in, the index changes, the change log remembers the records
 * and every subscriber gets its share, in that order, before it returns. This
 * is go-control-plane's versioned snapshot cache; the server only reads it.
 */
import {
  DEFAULT_MASS_DELETE_THRESHOLD,
  type MassDeleteThreshold,
} from "../../common/import-loss.js";
import type { ImportPolicy, ImportRejection } from "../../common/import-policy.js";
import type { Logger } from "../../runtime/logger.js";
import { createRateLimitedLog } from "../../runtime/rate-limited-log.js";
import type { StoredProjection, StoreEvent } from "../store/config-store.js";
import { createSubscribers, type SubscriberOptions } from "./cache-subscribers.js";
import { type CachedProjection, toCachedProjection } from "./cached-projection.js";
import { createChangeLog, eventsFor } from "./change-log.js";
import type { DeleteHold } from "./delete-holds.js";
import { createImportGuard, type ImportObserver } from "./import-guard.js";
import {
  type CacheEvent,
  type CacheView,
  type ChangeRecord,
  createProjectionIndex,
  type ProjectionIndex,
} from "./projection-index.js";

/** What a new subscriber gets first. */
export type InitialSync =
  | {
      /** A full snapshot: the subscriber replaces its state with `entries`. */
      readonly kind: "snapshot";
      /** The matching projections, by service then origin. */
      readonly entries: readonly CachedProjection[];
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

/** Options of {@link createCacheContents}. */
export interface CacheContentsOptions {
  /** The import policy of the effective view. */
  readonly policy: ImportPolicy;
  /** How many recent changes are kept for resuming streams. */
  readonly historyLimit: number;
  /** Where rejections (rate-limited: a few lines a minute, then a count) and failing subscribers are logged. */
  readonly logger: Logger;
  /** Called for each projection the import policy newly rejects. */
  readonly onRejection?: (rejection: ImportRejection<CachedProjection>) => void;
  /**
   * When one origin's deletes that arrive together are held (see
   * `delete-holds.ts`); default more than 50% and at least 3.
   */
  readonly massDelete?: MassDeleteThreshold;
  /** Where applied deletes are counted. */
  readonly importObserver?: ImportObserver;
  /** The clock, in milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
}

/** The cache's contents; see the module comment. */
export interface CacheContents {
  /** The index (read-only use: snapshots, stats, rejections, conflicts, entries). */
  readonly index: ProjectionIndex;
  /** The store revision the contents are consistent with (0 before the first listing). */
  readonly revision: number;
  /** How many subscribers there are. */
  readonly subscribers: number;
  /** Applies a batch of watch events and publishes what they change. */
  applyEvents(events: readonly StoreEvent[]): void;
  /**
   * Replaces the contents with a listing at `revision` (stale-then-sweep).
   * The first listing publishes nothing and starts the change log there;
   * a later one publishes the difference.
   */
  resync(listed: readonly StoredProjection[], revision: number, first: boolean): void;
  /** The projections of `services` (every one when undefined or empty) in `view`, by service then origin. */
  snapshot(services: ReadonlySet<string> | undefined, view: CacheView): readonly CachedProjection[];
  /**
   * Adds a subscriber: its initial sync (a replay after `resumeRevision` when
   * the change log still holds it, a snapshot otherwise) and its unsubscribe.
   */
  subscribe(options: SubscriberOptions & { readonly resumeRevision: number }): {
    initial: InitialSync;
    unsubscribe: () => void;
  };
  /** Ends every subscription, telling each why when `error` is given. */
  closeSubscribers(error: Error | undefined): void;
  /** The held deletes in force, by origin (see `delete-holds.ts`). */
  holds(): DeleteHold[];
  /**
   * Releases the held deletes of `origin` (every origin when undefined):
   * they are applied at the current revision and published, and no resume
   * at or before it is replayed any more (see `ChangeLog.seal`). Returns
   * how many deletes were applied.
   */
  releaseHolds(origin?: string): number;
  /**
   * Judges the puts refused for their signature again (the origins' keys
   * changed; see `ProjectionIndex.readmit`): those now accepted are applied
   * at the current revision and published, and no resume at or before it is
   * replayed any more. Returns how many were applied.
   */
  readmit(): number;
}

/** Creates empty contents (revision 0). */
export function createCacheContents(options: CacheContentsOptions): CacheContents {
  const { logger } = options;
  const rejectionLog = createRateLimitedLog(logger);
  const index = createProjectionIndex({
    policy: options.policy,
    onRejection(rejection) {
      const { origin, service } = rejection.candidate;
      const fields = { origin, service, reason: rejection.reason };
      rejectionLog.warn("import-rejection", fields, rejection.message);
      options.onRejection?.(rejection);
    },
  });
  const guard = createImportGuard({
    index,
    threshold: options.massDelete ?? DEFAULT_MASS_DELETE_THRESHOLD,
    logger,
    now: options.now ?? Date.now,
    ...(options.importObserver === undefined ? {} : { observer: options.importObserver }),
  });
  const log = createChangeLog({ limit: options.historyLimit });
  const subscribers = createSubscribers(logger);
  let revision = 0;

  function publish(records: readonly ChangeRecord[]): void {
    if (records.length === 0) return;
    log.remember(records);
    subscribers.publish(records);
  }

  /** Publishes changes made at the current revision, not from the store: no replay up to it. */
  function publishOutOfBand(records: readonly ChangeRecord[]): number {
    if (records.length > 0) {
      subscribers.publish(records);
      log.seal(revision);
    }
    return records.length;
  }

  return {
    index,
    get revision() {
      return revision;
    },
    get subscribers() {
      return subscribers.size;
    },
    applyEvents(events) {
      const records = guard.applyChanges(
        events.map((event) =>
          event.type === "put" ? { ...event, entry: toCachedProjection(event.entry) } : event,
        ),
      );
      const last = events[events.length - 1];
      if (last !== undefined) revision = Math.max(revision, last.revision);
      publish(records);
    },
    resync(listed, listRevision, first) {
      const entries = listed.map(toCachedProjection);
      const records = guard.resync(entries, listRevision);
      revision = Math.max(revision, listRevision);
      if (!first) {
        publish(records);
        return;
      }
      // A client may resume from the listing's revision having seen only part of
      // a batch written at it: keep that batch's puts replayable (its deletes
      // cannot be known from a listing; the export controller never batches them).
      const atListRevision = entries.filter(
        (entry) =>
          entry.modRevision === listRevision && index.get(entry.origin, entry.service) === entry,
      );
      log.restart(
        listRevision,
        atListRevision.map((entry) => index.upsertRecord(entry, listRevision)),
      );
    },
    snapshot: (services, view) => index.snapshot(services, view),
    subscribe(subscriberOptions) {
      const resume = subscriberOptions.resumeRevision;
      const initial: InitialSync = log.canReplay(resume, revision)
        ? {
            kind: "replay",
            events: eventsFor(log.recordsToReplay(resume), subscriberOptions),
            revision,
          }
        : {
            kind: "snapshot",
            entries: index.snapshot(subscriberOptions.services, subscriberOptions.view),
            revision,
          };
      return { initial, unsubscribe: subscribers.add(subscriberOptions) };
    },
    closeSubscribers: (error) => subscribers.closeAll(error),
    holds: () => guard.holds(),
    releaseHolds(origin) {
      return publishOutOfBand(guard.release(origin, revision));
    },
    readmit() {
      return publishOutOfBand(index.readmit(revision));
    },
  };
}
