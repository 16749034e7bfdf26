/**
 * The registrar's projection index: every origin's stored projections, by key
 * and by service, with the import policy applied (the rejected ones, one
 * winner per service, the services more than one trusted origin exports).
 * Synchronous and timer-free: the config cache (`config-cache.ts`) feeds it
 * the store's changes and fans the records it returns out to watch streams.
 * A change costs what it touches (the entry and the other origins of its
 * service), and a filtered read costs what it returns. Bytes pass through
 * undecoded.
 *
 * An entry rejected as `too_large` (a value over the projection byte limit)
 * is held, counted and reported like any rejection, but served in neither
 * view: the ALL_ORIGINS view, which agents read to apply the policy
 * themselves, sees it as a delete of that origin's projection, so no agent
 * is ever sent (or has to decode) an oversized value.
 *
 * Rollbacks are refused (`version-marks.ts`): a put older than the newest
 * version of its origin and service this index accepted in its lifetime
 * (deletes included) is not applied at all. The entry held stays served,
 * the refusal is reported and counted as a `rollback` rejection until the
 * key changes again, and no record is published. So are puts whose
 * signature the policy rejects (`unsigned`, `unknown_key`,
 * `bad_signature`): a forged value never replaces the last good projection,
 * and {@link ProjectionIndex.readmit} judges them again when the origins'
 * keys change.
 */
import type {
  ImportConflict,
  ImportPolicy,
  ImportRejection,
  ImportRejectionReason,
} from "../../common/import-policy.js";
import { byServiceThenOrigin, type CachedProjection } from "./cached-projection.js";
import { createEntryRejections, entryKey } from "./entry-rejections.js";

/** Which projections a reader sees: every origin's, or one winner per service. */
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

/** A change the index applies: a store event with the entry in the cache's form. */
export type CacheChange =
  | {
      /** A projection was created or changed. */
      readonly type: "put";
      /** The new value. */
      readonly entry: CachedProjection;
      /** The store revision of the change. */
      readonly revision: number;
    }
  | {
      /** A projection was deleted. */
      readonly type: "delete";
      /** The origin, from the key path. */
      readonly origin: string;
      /** The service, from the key path. */
      readonly service: string;
      /** The store revision of the change. */
      readonly revision: number;
    };

/**
 * What one applied change means to each view: `raw` is the change itself
 * (the ALL_ORIGINS view), `effective` the change of its service's winner, or
 * undefined when the winner did not change (the EFFECTIVE view).
 */
export interface ChangeRecord {
  /** The store revision of the change. */
  readonly revision: number;
  /**
   * The change as every origin's view sees it (a put of an entry rejected
   * as `too_large` is a delete there).
   */
  readonly raw: CacheEvent;
  /** The change of the service's winner, if it changed. */
  readonly effective: CacheEvent | undefined;
}

/** The index's counts. */
export interface IndexStats {
  /** Stored projections of every origin. */
  readonly projections: number;
  /** Services with an effective (trusted, winning) projection. */
  readonly effectiveServices: number;
  /** Services that more than one trusted origin exports. */
  readonly conflicts: number;
  /** Projections currently rejected by the import policy, by reason. */
  readonly rejected: ReadonlyMap<ImportRejectionReason, number>;
}

/** Options of {@link createProjectionIndex}. */
export interface ProjectionIndexOptions {
  /** The import policy: who is trusted, and who wins a service. */
  readonly policy: ImportPolicy;
  /**
   * Called synchronously, from `apply` or `resync`, for each projection the
   * policy newly rejects: a new value, not the same value applied again. It
   * must not call back into the index.
   */
  readonly onRejection?: (rejection: ImportRejection<CachedProjection>) => void;
}

/** The projection index; see the module comment. */
export interface ProjectionIndex {
  /**
   * Applies one change and returns its record. A put replaces the origin's
   * entry of the service (and checks it against the policy); a put the
   * policy accepts but that is older than its key's high-water mark is
   * refused as `rollback`: nothing changes and undefined is returned. A
   * delete (always applied) of an entry that is not there still yields a
   * raw delete. Costs the entry and the other origins of its service.
   */
  apply(change: CacheChange): ChangeRecord | undefined;
  /**
   * Makes the index hold exactly `listing` (the store's state at `revision`),
   * stale-then-sweep: a put at `revision` for each listed entry whose
   * `modRevision` differs from the one held (or that is not held), then a
   * delete at `revision` for each held entry the listing lacks. Returns the
   * records of those changes, in that order; an entry listed unchanged
   * yields none and stays the object already held. `sweep`, when given, is
   * handed the held entries the listing lacks and returns those to delete
   * (the rest stay held, as they are).
   */
  resync(
    listing: readonly CachedProjection[],
    revision: number,
    sweep?: (stale: CachedProjection[]) => readonly CachedProjection[],
  ): ChangeRecord[];
  /**
   * Judges the puts refused for their signature again (the origins' keys
   * changed): each is applied at `revision` when the policy now accepts it
   * (and it is no rollback). Returns the records of those applied.
   */
  readmit(revision: number): ChangeRecord[];
  /** The entry of `origin`'s `service`, if the index holds one. */
  get(origin: string, service: string): CachedProjection | undefined;
  /** How many entries of `origin` the index holds. */
  originSize(origin: string): number;
  /**
   * The record of `entry` as an upsert at `revision`, as the index stands:
   * its raw upsert (a raw delete when it is rejected as `too_large`), and
   * its effective upsert when `entry` (this object) is its service's winner.
   * Changes nothing; for the change log's records of a listing's own revision.
   */
  upsertRecord(entry: CachedProjection, revision: number): ChangeRecord;
  /**
   * The projections of `services` (every service when undefined or empty) in
   * `view`, by service then origin (never an entry rejected as
   * `too_large`). A filtered snapshot goes through the per-service indexes,
   * so it costs what it returns. An unfiltered one is shared by every caller
   * until the next change: it must not be modified.
   */
  snapshot(services: ReadonlySet<string> | undefined, view: CacheView): readonly CachedProjection[];
  /** The current counts. */
  stats(): IndexStats;
  /** The rejections currently in force, by service then origin. */
  rejections(): ImportRejection<CachedProjection>[];
  /**
   * The services more than one trusted origin exports, by service: the
   * winner (the effective entry) and the trusted losers, best first, as the
   * policy ranks them. Costs the conflicted services, not every entry.
   */
  conflicts(): ImportConflict<CachedProjection>[];
  /** Every stored projection of every origin, by service then origin (served or not). */
  entries(): CachedProjection[];
}

/** The upsert event of `entry` at `revision`. */
function upsertOf(entry: CachedProjection, revision: number): CacheEvent {
  return { type: "upsert", origin: entry.origin, service: entry.service, entry, revision };
}

/** The maps of an index a snapshot reads. */
interface SnapshotSources {
  /** Every entry, by origin and service. */
  readonly all: ReadonlyMap<string, CachedProjection>;
  /** The winner of each service with a trusted entry. */
  readonly effective: ReadonlyMap<string, CachedProjection>;
  /** Every entry, by service, then origin. */
  readonly byService: ReadonlyMap<string, ReadonlyMap<string, CachedProjection>>;
}

/**
 * The entries of `services` (every service when undefined or empty) in
 * `view`, by service then origin; in the `all` view only those `servable`
 * accepts (winners always are). A filtered snapshot goes through the
 * per-service indexes, so it costs what it returns.
 */
function collectSnapshot(
  sources: SnapshotSources,
  services: ReadonlySet<string> | undefined,
  view: CacheView,
  servable: (entry: CachedProjection) => boolean,
): CachedProjection[] {
  const { all, effective, byService } = sources;
  const entries: CachedProjection[] = [];
  if (services === undefined || services.size === 0) {
    if (view === "effective") for (const entry of effective.values()) entries.push(entry);
    else for (const entry of all.values()) if (servable(entry)) entries.push(entry);
    return entries.sort(byServiceThenOrigin);
  }
  for (const service of services) {
    if (view === "effective") {
      const entry = effective.get(service);
      if (entry !== undefined) entries.push(entry);
    } else {
      for (const entry of byService.get(service)?.values() ?? []) {
        if (servable(entry)) entries.push(entry);
      }
    }
  }
  return entries.sort(byServiceThenOrigin);
}

/**
 * Makes `winner` the effective entry of `service` in `effective` (none when
 * undefined) and returns the effective view's event for that change at
 * `revision`: an upsert of a new winner, a delete when the service lost its
 * last trusted entry, or undefined when the winner stayed the same.
 */
function setWinner(
  effective: Map<string, CachedProjection>,
  service: string,
  winner: CachedProjection | undefined,
  revision: number,
): CacheEvent | undefined {
  const before = effective.get(service);
  if (winner === undefined) {
    if (before === undefined) return undefined;
    effective.delete(service);
    return { type: "delete", origin: before.origin, service, revision };
  }
  if (before === winner) return undefined;
  effective.set(service, winner);
  return upsertOf(winner, revision);
}

/** Creates an empty index under `options.policy`. */
export function createProjectionIndex(options: ProjectionIndexOptions): ProjectionIndex {
  const { policy } = options;
  /** Every entry, by origin and service. */
  const all = new Map<string, CachedProjection>();
  /** Every entry, by service, then origin. */
  const byService = new Map<string, Map<string, CachedProjection>>();
  /** The winner of each service with a trusted entry. */
  const effective = new Map<string, CachedProjection>();
  /** The rejections in force (the policy's, and refused rollbacks). */
  const rejections = createEntryRejections(policy, options.onRejection);
  const { servable } = rejections;
  /** The services with more than one trusted entry. */
  const conflicted = new Set<string>();
  /** How many entries each origin has. */
  const perOriginCount = new Map<string, number>();
  /**
   * The unfiltered snapshot of each view until the next change: every
   * unfiltered WatchConfig stream and list call of that time shares it (a
   * copy per caller, sorted each time, was 80 KB and ~10 ms of CPU per
   * stream at 10,000 services, held as long as the stream's snapshot is
   * unsent).
   */
  const unfiltered = new Map<CacheView, readonly CachedProjection[]>();

  function countOrigin(origin: string, delta: number): void {
    const count = (perOriginCount.get(origin) ?? 0) + delta;
    if (count === 0) perOriginCount.delete(origin);
    else perOriginCount.set(origin, count);
  }

  /** The trusted entries of `service`, best first. */
  function ranked(service: string): CachedProjection[] {
    const trusted: CachedProjection[] = [];
    for (const candidate of byService.get(service)?.values() ?? []) {
      if (!rejections.isRejected(entryKey(candidate.origin, service))) trusted.push(candidate);
    }
    return policy.rank(trusted);
  }

  function apply(change: CacheChange): ChangeRecord | undefined {
    const origin = change.type === "put" ? change.entry.origin : change.origin;
    const service = change.type === "put" ? change.entry.service : change.service;
    const key = entryKey(origin, service);
    let raw: CacheEvent;
    if (change.type === "put") {
      if (!rejections.admit(change.entry)) return undefined;
      unfiltered.clear();
      if (!all.has(key)) countOrigin(origin, 1);
      all.set(key, change.entry);
      let perOrigin = byService.get(service);
      if (perOrigin === undefined) {
        perOrigin = new Map();
        byService.set(service, perOrigin);
      }
      perOrigin.set(origin, change.entry);
      raw = servable(key)
        ? upsertOf(change.entry, change.revision)
        : { type: "delete", origin, service, revision: change.revision };
    } else {
      unfiltered.clear();
      if (all.delete(key)) countOrigin(origin, -1);
      rejections.forget(origin, service);
      const perOrigin = byService.get(service);
      perOrigin?.delete(origin);
      if (perOrigin?.size === 0) byService.delete(service);
      raw = { type: "delete", origin, service, revision: change.revision };
    }
    const trusted = ranked(service);
    if (trusted.length > 1) conflicted.add(service);
    else conflicted.delete(service);
    const effectiveEvent = setWinner(effective, service, trusted[0], change.revision);
    return { revision: change.revision, raw, effective: effectiveEvent };
  }

  function resync(
    listing: readonly CachedProjection[],
    revision: number,
    sweep?: (stale: CachedProjection[]) => readonly CachedProjection[],
  ): ChangeRecord[] {
    const records: ChangeRecord[] = [];
    const seen = new Set<string>();
    for (const entry of listing) {
      const key = entryKey(entry.origin, entry.service);
      seen.add(key);
      if (all.get(key)?.modRevision === entry.modRevision) continue;
      const record = apply({ type: "put", entry, revision });
      if (record !== undefined) records.push(record);
    }
    const stale: CachedProjection[] = [];
    for (const [key, entry] of all) if (!seen.has(key)) stale.push(entry);
    for (const entry of sweep === undefined ? stale : sweep(stale)) {
      const record = apply({
        type: "delete",
        origin: entry.origin,
        service: entry.service,
        revision,
      });
      if (record !== undefined) records.push(record);
    }
    return records;
  }

  return {
    apply,
    resync,
    readmit(revision) {
      const records: ChangeRecord[] = [];
      for (const entry of rejections.refusedForSignature()) {
        const record = apply({ type: "put", entry, revision });
        if (record !== undefined) records.push(record);
      }
      return records;
    },
    get: (origin, service) => all.get(entryKey(origin, service)),
    originSize: (origin) => perOriginCount.get(origin) ?? 0,
    upsertRecord(entry, revision) {
      const winner = effective.get(entry.service) === entry;
      const { origin, service } = entry;
      return {
        revision,
        raw: servable(entryKey(origin, service))
          ? upsertOf(entry, revision)
          : { type: "delete", origin, service, revision },
        effective: winner ? upsertOf(entry, revision) : undefined,
      };
    },
    snapshot(services, view) {
      const whole = services === undefined || services.size === 0;
      const kept = whole ? unfiltered.get(view) : undefined;
      if (kept !== undefined) return kept;
      const entries = collectSnapshot({ all, effective, byService }, services, view, (entry) =>
        servable(entryKey(entry.origin, entry.service)),
      );
      if (whole) unfiltered.set(view, entries);
      return entries;
    },
    stats() {
      return {
        projections: all.size,
        effectiveServices: effective.size,
        conflicts: conflicted.size,
        rejected: rejections.counts(),
      };
    },
    rejections: () => rejections.list(),
    conflicts() {
      return [...conflicted].sort().map((service) => {
        const [winner, ...losers] = ranked(service) as [CachedProjection, ...CachedProjection[]];
        return { service, winner, losers };
      });
    },
    entries() {
      return [...all.values()].sort(byServiceThenOrigin);
    },
  };
}
