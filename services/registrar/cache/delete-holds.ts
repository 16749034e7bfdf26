/**
 * The registrar cache's held deletes: when one origin's projections vanish
 * from the store at once (one store revision, or one re-listing, deleting
 * more than the threshold of them), the deletes are not applied. The
 * entries stay in the index and in every view, no DELETE is published, and
 * the hold is recorded here (origin, services, since, revision, reason), the
 * way the export controller holds unexports while its source reports
 * problems. A hold ends service by service when the origin writes a held
 * service again (it is back), and as a whole when an operator releases it.
 *
 * Why one revision: the export controller deletes one key per store revision
 * (see `export-controller.ts`), so several of an origin's keys deleted in one
 * revision are never its unexports; they are a prefix or range delete, a
 * wipe. A re-listing after the store was lost cannot tell when keys went, so
 * it is judged as one change too.
 *
 * Synchronous and timer-free: the plan is a pure function, the holds a
 * plain container; `cache-contents.ts` applies them.
 */
import { isMassDisappearance, type MassDeleteThreshold } from "../../common/import-loss.js";

/** One origin's projection of one service. */
export interface DeleteRef {
  /** The origin, from the key path. */
  readonly origin: string;
  /** The service. */
  readonly service: string;
}

/** What {@link planDeletes} decides. */
export interface DeletePlan<T extends DeleteRef = DeleteRef> {
  /** The deletes to apply (the objects given), in the order given. */
  readonly apply: readonly T[];
  /** The deletes to hold, by origin, each with the origin's held count it was judged against. */
  readonly hold: ReadonlyMap<string, { readonly services: string[]; readonly of: number }>;
}

/**
 * Decides which of the deletes that arrive together (one store revision, or
 * one re-listing's sweep) to hold: every delete of an origin whose deletes
 * are a mass disappearance of its `held(origin)` projections under
 * `threshold`; the rest are applied. `deletes` must name entries the cache
 * holds and does not hold deletes of already.
 */
export function planDeletes<T extends DeleteRef>(
  deletes: readonly T[],
  held: (origin: string) => number,
  threshold: MassDeleteThreshold,
): DeletePlan<T> {
  const byOrigin = new Map<string, string[]>();
  for (const { origin, service } of deletes) {
    let services = byOrigin.get(origin);
    if (services === undefined) {
      services = [];
      byOrigin.set(origin, services);
    }
    services.push(service);
  }
  const hold = new Map<string, { services: string[]; of: number }>();
  for (const [origin, services] of byOrigin) {
    const of = held(origin);
    if (isMassDisappearance(of, services.length, threshold)) hold.set(origin, { services, of });
  }
  return {
    apply: hold.size === 0 ? deletes : deletes.filter((d) => !hold.has(d.origin)),
    hold,
  };
}

/** One origin's held deletes. */
export interface DeleteHold {
  /** The origin whose projections vanished. */
  readonly origin: string;
  /** The services whose deletes are held: absent from the store, still served. */
  readonly services: ReadonlySet<string>;
  /** When the hold started, in milliseconds since the epoch. */
  readonly since: number;
  /** The store revision of the first held delete. */
  readonly revision: number;
  /** Why the deletes are held, as a sentence. */
  readonly reason: string;
}

/** The held deletes of every origin; see the module comment. */
export interface DeleteHolds {
  /** How many deletes are held, over every origin. */
  readonly size: number;
  /** Whether the delete of `origin`'s `service` is held. */
  isHeld(origin: string, service: string): boolean;
  /**
   * Holds the deletes of `origin`'s `services`. An origin already held keeps
   * its `since`, `revision` and `reason` and adds the services.
   */
  hold(
    origin: string,
    services: readonly string[],
    at: { readonly revision: number; readonly now: number; readonly reason: string },
  ): void;
  /**
   * Ends the hold of one service (its origin wrote it again). Returns
   * `"released"`, `"ended"` when that was the origin's last held service (its
   * hold is over), or undefined when it was not held.
   */
  release(origin: string, service: string): "released" | "ended" | undefined;
  /** Removes and returns the holds of `origin` (every origin when undefined). */
  take(origin?: string): DeleteHold[];
  /** The current holds, by origin. */
  list(): DeleteHold[];
}

/** Creates an empty set of holds. */
export function createDeleteHolds(): DeleteHolds {
  const holds = new Map<string, DeleteHold & { readonly services: Set<string> }>();
  let size = 0;
  return {
    get size() {
      return size;
    },
    isHeld: (origin, service) => holds.get(origin)?.services.has(service) === true,
    hold(origin, services, at) {
      let held = holds.get(origin);
      if (held === undefined) {
        held = {
          origin,
          services: new Set(),
          since: at.now,
          revision: at.revision,
          reason: at.reason,
        };
        holds.set(origin, held);
      }
      for (const service of services) {
        if (held.services.has(service)) continue;
        held.services.add(service);
        size++;
      }
    },
    release(origin, service) {
      const held = holds.get(origin);
      if (held === undefined || !held.services.delete(service)) return undefined;
      size--;
      if (held.services.size > 0) return "released";
      holds.delete(origin);
      return "ended";
    },
    take(origin) {
      const taken = [...holds.values()].filter((h) => origin === undefined || h.origin === origin);
      for (const held of taken) {
        holds.delete(held.origin);
        size -= held.services.size;
      }
      return taken.sort((a, b) => (a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : 0));
    },
    list: () =>
      [...holds.values()]
        .map((h) => ({ ...h, services: new Set(h.services) }))
        .sort((a, b) => (a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : 0)),
  };
}

/**
 * The degraded reason a registrar reports for `holds` (undefined when there
 * are none): how many deletes of which origins are held, since when, why,
 * and how they are released.
 */
export function describeHolds(holds: readonly DeleteHold[]): string | undefined {
  if (holds.length === 0) return undefined;
  const parts = holds.map(
    (h) =>
      `${h.services.size} deletes of origin ${h.origin} held since ${new Date(h.since).toISOString()} (${h.reason})`,
  );
  return `${parts.join("; ")}; still served. Released by the origin writing them again, or by an operator (SIGUSR2 to the registrar)`;
}
