/**
 * The registrar cache's guard against silent loss: every change of the store
 * reaches the projection index through it. It applies puts (the index
 * itself refuses rollbacks, as `rollback` rejections: see
 * `version-marks.ts`); it applies deletes, noting each, except the mass
 * disappearances `delete-holds.ts` decides to hold; and it releases holds
 * (a held service written again, or by an operator). Each call ends with
 * one summary per origin: a log line (info for deletes, warn for holds) and
 * the counts handed to the observer (the metrics), so a busy batch is one
 * line, not one per entry.
 *
 * Synchronous and timer-free (the clock is injected); `cache-contents.ts`
 * publishes the records it returns.
 */
import { describeThreshold, type MassDeleteThreshold } from "../../common/import-loss.js";
import type { Logger } from "../../runtime/logger.js";
import type { CachedProjection } from "./cached-projection.js";
import { createDeleteHolds, type DeleteHold, type DeleteRef, planDeletes } from "./delete-holds.js";
import type { CacheChange, ChangeRecord, ProjectionIndex } from "./projection-index.js";

/** Where the guard reports what it applied (the metrics). */
export interface ImportObserver {
  /** `count` deletes of `origin`'s projections were applied. */
  onDeletes?(origin: string, count: number): void;
}

/** Options of {@link createImportGuard}. */
export interface ImportGuardOptions {
  /** The index every change goes to. */
  readonly index: ProjectionIndex;
  /** When deletes that arrive together are held. */
  readonly threshold: MassDeleteThreshold;
  /** Where the summaries are logged. */
  readonly logger: Logger;
  /** The clock, in milliseconds since the epoch (the start of a hold). */
  readonly now: () => number;
  /** Where applied deletes are counted. */
  readonly observer?: ImportObserver;
}

/** The guard; see the module comment. */
export interface ImportGuard {
  /** The holds in force, by origin. */
  holds(): DeleteHold[];
  /** How many deletes are held, over every origin. */
  readonly heldDeletes: number;
  /** Applies a batch of store changes (in revision order); returns their records. */
  applyChanges(changes: readonly CacheChange[]): ChangeRecord[];
  /** Applies a re-listing at `revision` (stale-then-sweep); returns its records. */
  resync(entries: readonly CachedProjection[], revision: number): ChangeRecord[];
  /**
   * Releases the holds of `origin` (every origin when undefined): their
   * deletes are applied at `revision`. Returns the records to publish.
   */
  release(origin: string | undefined, revision: number): ChangeRecord[];
}

/** How many services a summary line names; the rest are counted. */
const LOGGED_SERVICES = 20;

/** What one call applied and held, by origin, for its summary. */
interface Tally {
  readonly deleted: Map<string, string[]>;
  readonly backFromHold: Map<string, string[]>;
  readonly held: { origin: string; services: string[]; reason: string }[];
}

const newTally = (): Tally => ({
  deleted: new Map(),
  backFromHold: new Map(),
  held: [],
});

function note(map: Map<string, string[]>, origin: string, item: string): void {
  const list = map.get(origin);
  if (list === undefined) map.set(origin, [item]);
  else list.push(item);
}

/** Creates the guard over an index. */
export function createImportGuard(options: ImportGuardOptions): ImportGuard {
  const { index, threshold, logger, now, observer } = options;
  const holds = createDeleteHolds();

  /** Notes what an applied put of `entry` means: a held service back (a refused rollback is none). */
  function observePut(entry: CachedProjection, tally: Tally): void {
    if (holds.release(entry.origin, entry.service) !== undefined) {
      note(tally.backFromHold, entry.origin, entry.service);
    }
  }

  /** Holds the mass disappearances among `refs` (present, not held); returns the rest. */
  function holdMass<T extends DeleteRef>(
    refs: readonly T[],
    revision: number,
    where: string,
    tally: Tally,
  ): readonly T[] {
    const plan = planDeletes(refs, (origin) => index.originSize(origin), threshold);
    for (const [origin, { services, of }] of plan.hold) {
      const reason = `${services.length} of its ${of} projections ${where} at revision ${revision}; threshold ${describeThreshold(threshold)}`;
      holds.hold(origin, services, { revision, now: now(), reason });
      tally.held.push({ origin, services, reason });
    }
    return plan.apply;
  }

  function applyGroup(group: readonly CacheChange[], tally: Tally, records: ChangeRecord[]) {
    const revision = (group[0] as CacheChange).revision;
    const refs: DeleteRef[] = [];
    for (const change of group) {
      if (change.type !== "delete" || holds.isHeld(change.origin, change.service)) continue;
      if (index.get(change.origin, change.service) !== undefined) refs.push(change);
    }
    holdMass(refs, revision, "deleted in one store revision", tally);
    for (const change of group) {
      if (change.type === "delete") {
        if (holds.isHeld(change.origin, change.service)) continue;
        if (index.get(change.origin, change.service) !== undefined) {
          note(tally.deleted, change.origin, change.service);
        }
      }
      const record = index.apply(change);
      if (record === undefined) continue;
      if (change.type === "put") observePut(change.entry, tally);
      records.push(record);
    }
  }

  function summarize(tally: Tally, revision: number): void {
    const named = (services: readonly string[]) => services.slice(0, LOGGED_SERVICES);
    for (const { origin, services, reason } of tally.held) {
      logger.warn(
        {
          origin,
          held: services.length,
          heldTotal: holds.size,
          revision,
          services: named(services),
          reason,
        },
        "holding a mass deletion of imported projections: they stay served and no DELETE is published until their origin writes them again or an operator releases the hold",
      );
    }
    for (const [origin, services] of tally.backFromHold) {
      const still = holds.list().find((h) => h.origin === origin)?.services.size ?? 0;
      logger.info(
        { origin, back: services.length, stillHeld: still, revision, services: named(services) },
        still === 0
          ? "hold over: the origin wrote every held projection again"
          : "held projections written again by their origin",
      );
    }
    for (const [origin, services] of tally.deleted) {
      observer?.onDeletes?.(origin, services.length);
      logger.info(
        { origin, deletes: services.length, revision, services: named(services) },
        "applied deletes of imported projections",
      );
    }
  }

  return {
    holds: () => holds.list(),
    get heldDeletes() {
      return holds.size;
    },
    applyChanges(changes) {
      const tally = newTally();
      const records: ChangeRecord[] = [];
      let start = 0;
      while (start < changes.length) {
        const revision = (changes[start] as CacheChange).revision;
        let end = start + 1;
        while (end < changes.length && (changes[end] as CacheChange).revision === revision) end++;
        applyGroup(changes.slice(start, end), tally, records);
        start = end;
      }
      const last = changes[changes.length - 1];
      if (last !== undefined) summarize(tally, last.revision);
      return records;
    },
    resync(entries, revision) {
      const tally = newTally();
      const changed = entries.filter(
        (entry) => index.get(entry.origin, entry.service)?.modRevision !== entry.modRevision,
      );
      const records = index.resync(entries, revision, (stale) => {
        const refs = stale.filter((entry) => !holds.isHeld(entry.origin, entry.service));
        const swept = holdMass(refs, revision, "missing from a re-listing", tally);
        for (const entry of swept) note(tally.deleted, entry.origin, entry.service);
        return swept;
      });
      // Only the listed puts the index applied (held as this very object) end a hold.
      for (const entry of changed) {
        if (index.get(entry.origin, entry.service) === entry) observePut(entry, tally);
      }
      summarize(tally, revision);
      return records;
    },
    release(origin, revision) {
      const tally = newTally();
      const records: ChangeRecord[] = [];
      for (const hold of holds.take(origin)) {
        logger.warn(
          {
            origin: hold.origin,
            released: hold.services.size,
            since: new Date(hold.since).toISOString(),
            revision,
          },
          "hold released by an operator: applying the held deletes",
        );
        for (const service of hold.services) {
          if (index.get(hold.origin, service) === undefined) continue;
          note(tally.deleted, hold.origin, service);
          const record = index.apply({ type: "delete", origin: hold.origin, service, revision });
          if (record !== undefined) records.push(record);
        }
      }
      summarize(tally, revision);
      return records;
    },
  };
}
