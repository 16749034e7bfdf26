/**
 * The newest projection the agent refused, per service and origin: what its
 * report to the registrar names as `rejection` (see `applied-report.ts`).
 * Every refusal the follower reports (a signature, a rollback, a bad shape,
 * an untrusted origin...) and every cache entry dropped at a restart is
 * noted (except one naming no valid origin: a malformed event); an older refusal of the same origin and service never replaces a
 * newer one. Bounded: at most {@link MAX_ORIGINS_PER_SERVICE} origins per
 * service and {@link MAX_REMEMBERED_SERVICES} services, and what leaves the
 * followed set is forgotten ({@link RefusalMemory.prune}). No I/O.
 */
import { parseVersion } from "../../../services/common/projection-version.js";
import { checkClusterName } from "../../../services/common/service-name.js";

/** The most origins remembered per service. */
export const MAX_ORIGINS_PER_SERVICE = 8;
/** The most services remembered. */
export const MAX_REMEMBERED_SERVICES = 20_000;

/** A refused projection. */
export interface Refusal {
  /** Its origin. */
  readonly origin: string;
  /** Its service. */
  readonly service: string;
  /** Its version as received (may not parse: `invalid_version`). */
  readonly version: string;
  /** The machine-readable reason. */
  readonly reason: string;
  /** A sentence for operators. */
  readonly message: string;
}

/** The refusals remembered; see the module comment. */
export interface RefusalMemory {
  /** Notes a refusal. */
  note(refusal: Refusal): void;
  /** Forgets every service not in `followed`. */
  prune(followed: ReadonlySet<string>): void;
  /**
   * The refusal to report for `service`: the newest one newer than the
   * applied version (any when none is applied), an untrusted origin's only
   * when there is no other; undefined when there is none.
   */
  newest(service: string, appliedVersion: string): Refusal | undefined;
}

/** A version's instant, or -1 when it does not parse (it then sorts below every real one). */
function instant(version: string): bigint {
  return parseVersion(version) ?? -1n;
}

/** Creates an empty memory. */
export function createRefusalMemory(): RefusalMemory {
  const byService = new Map<string, Map<string, Refusal>>();
  return {
    note(refusal) {
      // A refusal naming no valid origin (a malformed event) cannot be reported.
      if (checkClusterName(refusal.origin) !== undefined) return;
      let origins = byService.get(refusal.service);
      if (origins === undefined) {
        if (byService.size >= MAX_REMEMBERED_SERVICES) return;
        origins = new Map();
        byService.set(refusal.service, origins);
      }
      const held = origins.get(refusal.origin);
      if (held !== undefined && instant(held.version) > instant(refusal.version)) return;
      if (held === undefined && origins.size >= MAX_ORIGINS_PER_SERVICE) return;
      origins.set(refusal.origin, refusal);
    },
    prune(followed) {
      for (const service of byService.keys()) {
        if (!followed.has(service)) byService.delete(service);
      }
    },
    newest(service, appliedVersion) {
      const applied = appliedVersion === "" ? undefined : instant(appliedVersion);
      let best: Refusal | undefined;
      for (const refusal of byService.get(service)?.values() ?? []) {
        if (applied !== undefined && instant(refusal.version) <= applied) continue;
        if (best === undefined || ranksAbove(refusal, best)) best = refusal;
      }
      return best;
    },
  };
}

/** Whether `a` is the better refusal to report than `b`. */
function ranksAbove(a: Refusal, b: Refusal): boolean {
  const untrustedA = a.reason === "untrusted_origin";
  const untrustedB = b.reason === "untrusted_origin";
  if (untrustedA !== untrustedB) return untrustedB;
  const va = instant(a.version);
  const vb = instant(b.version);
  if (va !== vb) return va > vb;
  return a.origin < b.origin;
}
