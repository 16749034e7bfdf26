/**
 * The candidate set: how received changes (stream events, listing entries)
 * become the agent's candidate map, every accepted origin's projection of
 * the dependency set keyed by {@link candidateKey}.
 *
 * - A put goes through {@link checkReceived} (requested service, well-formed
 *   event, shared import policy). A rejected put is never applied: the
 *   candidate the previous map held for its key stays (when its service is
 *   still requested), it is neither replaced nor removed.
 * - A put the policy accepts but that is older than the newest version of
 *   its origin and service this set accepted (its high-water mark, see
 *   `version-marks.ts`) is refused as `rollback`, like any rejection. Marks
 *   start from the last-known cache's, rise with every accepted put and
 *   survive deletes: a replayed old value is refused after a delete too.
 * - A delete outside the requested set, or naming no origin, is refused.
 * - Each rejection is reported once per origin, service, version and reason:
 *   a memory of the last rejection per key (bounded, cleared when full, and
 *   forgotten for a key once a change to it is accepted) drops repeats.
 *
 * No I/O, no timers: its only state is the requested set, the marks and
 * that memory.
 * The maps it returns are new; the maps it is given are never changed.
 */
import type { ImportCandidate, ImportPolicy } from "../../../services/common/import-policy.js";
import { createVersionMarks, type VersionMark } from "../../../services/common/version-marks.js";
import {
  candidateKey,
  checkReceived,
  type ReceivedProjection,
  type ReceivedRejection,
} from "./received-projection.js";

/** The most distinct rejected projections remembered for de-duplicating reports. */
export const MAX_REMEMBERED_REJECTIONS = 10_000;

/** A received change, from a stream event or a listing. */
export interface ReceivedChange extends ReceivedProjection {
  /** A put (snapshot, upsert, listing entry) or a delete. */
  readonly kind: "put" | "delete";
}

/** A new candidate map, and the rejections met building it that were not reported before. */
export interface CandidateMap {
  /** The new map (a new object, never one that was passed in). */
  readonly candidates: Map<string, ImportCandidate>;
  /** The rejections to report, in the order of the changes. */
  readonly rejections: readonly ReceivedRejection[];
}

/** The outcome of {@link CandidateSet.change}. */
export interface CandidateChange {
  /** The new map, or undefined when the change left the candidates as they were. */
  readonly candidates: Map<string, ImportCandidate> | undefined;
  /** The rejections to report (at most one). */
  readonly rejections: readonly ReceivedRejection[];
}

/** Options of {@link createCandidateSet}. */
export interface CandidateSetOptions {
  /** The import policy every put is checked with. */
  readonly policy: ImportPolicy;
  /** The requested services (the dependency set). */
  readonly services: Iterable<string>;
  /** How many rejected keys to remember; default {@link MAX_REMEMBERED_REJECTIONS}. */
  readonly rememberedRejections?: number;
  /** The high-water marks to start from (the last-known cache's); default none. */
  readonly marks?: Iterable<VersionMark>;
}

/** The application of received changes to candidate maps; see the module comment. */
export interface CandidateSet {
  /** The requested services. */
  readonly requested: ReadonlySet<string>;
  /** Replaces the requested services; later changes are checked against them. */
  setServices(services: Iterable<string>): void;
  /** Every high-water mark, by origin then service (for the last-known cache). */
  marks(): VersionMark[];
  /**
   * A complete state (a fresh snapshot, a listing): `changes` applied to an
   * empty map; a rejected put keeps what `previous` held for its key.
   */
  snapshot(
    previous: ReadonlyMap<string, ImportCandidate> | undefined,
    changes: readonly ReceivedChange[],
  ): CandidateMap;
  /** A resumed stream's replay: `changes` applied to a copy of `previous`. */
  replay(
    previous: ReadonlyMap<string, ImportCandidate> | undefined,
    changes: readonly ReceivedChange[],
  ): CandidateMap;
  /**
   * One streamed change applied to a copy of `current`; the map is returned
   * only when some entry differs from `current`'s.
   */
  change(
    current: ReadonlyMap<string, ImportCandidate> | undefined,
    change: ReceivedChange,
  ): CandidateChange;
}

const EMPTY: ReadonlyMap<string, ImportCandidate> = new Map();
const NONE: readonly ReceivedRejection[] = [];

/** Creates a candidate set for a policy and a requested service set. */
export function createCandidateSet(options: CandidateSetOptions): CandidateSet {
  const { policy } = options;
  const limit = options.rememberedRejections ?? MAX_REMEMBERED_REJECTIONS;
  let requested: ReadonlySet<string> = new Set(options.services);
  const marks = createVersionMarks(options.marks);
  /** The last rejection reported per key, as `reason NUL version`. */
  const remembered = new Map<string, string>();

  /** Adds `rejection` to `reports` unless it is the one reported last for `key`. */
  const noteRejection = (
    key: string,
    rejection: ReceivedRejection,
    reports: ReceivedRejection[],
  ) => {
    const tag = `${rejection.reason}\u0000${rejection.version}`;
    if (remembered.get(key) === tag) return;
    if (remembered.size >= limit) remembered.clear();
    remembered.set(key, tag);
    reports.push(rejection);
  };

  /** Applies one change to `target`, the map under construction. */
  const apply = (
    target: Map<string, ImportCandidate>,
    change: ReceivedChange,
    previous: ReadonlyMap<string, ImportCandidate>,
    reports: ReceivedRejection[],
  ) => {
    const key = candidateKey(change.origin, change.service);
    if (change.kind === "delete") {
      const problem = !requested.has(change.service)
        ? ("not_requested" as const)
        : change.origin === ""
          ? ("malformed_event" as const)
          : undefined;
      if (problem !== undefined) {
        noteRejection(
          key,
          {
            origin: change.origin,
            service: change.service,
            version: "",
            reason: problem,
            message: `DELETE of ${JSON.stringify(change.service)} from ${JSON.stringify(change.origin)} refused (${problem})`,
          },
          reports,
        );
        return;
      }
      target.delete(key);
      remembered.delete(key);
      return;
    }
    const result = checkReceived(change, requested, policy);
    const rollback = result.candidate === undefined ? undefined : marks.check(result.candidate);
    const rejection: ReceivedRejection | undefined =
      rollback === undefined
        ? result.rejection
        : {
            origin: change.origin,
            service: change.service,
            version: rollback.candidate.projection.version,
            reason: rollback.reason,
            message: rollback.message,
          };
    if (rejection !== undefined || result.candidate === undefined) {
      if (rejection !== undefined) noteRejection(key, rejection, reports);
      const kept = previous.get(key);
      if (kept !== undefined && requested.has(change.service)) target.set(key, kept);
      return;
    }
    marks.accept(result.candidate);
    remembered.delete(key);
    target.set(key, result.candidate);
  };

  const build = (
    target: Map<string, ImportCandidate>,
    previous: ReadonlyMap<string, ImportCandidate>,
    changes: readonly ReceivedChange[],
  ): CandidateMap => {
    const reports: ReceivedRejection[] = [];
    for (const change of changes) apply(target, change, previous, reports);
    return { candidates: target, rejections: reports };
  };

  return {
    get requested() {
      return requested;
    },
    setServices(services) {
      requested = new Set(services);
    },
    marks: () => marks.list(),
    snapshot(previous, changes) {
      return build(new Map(), previous ?? EMPTY, changes);
    },
    replay(previous, changes) {
      return build(new Map(previous), previous ?? EMPTY, changes);
    },
    change(held, change) {
      const current = held ?? EMPTY;
      const next = new Map(current);
      const reports: ReceivedRejection[] = [];
      apply(next, change, current, reports);
      return {
        candidates: differs(current, next) ? next : undefined,
        rejections: reports.length ? reports : NONE,
      };
    },
  };
}

/** Whether some entry of `next` is not the very one `current` holds for its key. */
function differs(
  current: ReadonlyMap<string, ImportCandidate>,
  next: ReadonlyMap<string, ImportCandidate>,
): boolean {
  if (next.size !== current.size) return true;
  for (const [key, value] of next) if (current.get(key) !== value) return true;
  return false;
}

/**
 * The candidates of `next` whose projection version `previous` did not hold
 * for their key (new content), in `next`'s order; every candidate when there
 * is no previous map.
 */
export function freshCandidates(
  previous: ReadonlyMap<string, ImportCandidate> | undefined,
  next: ReadonlyMap<string, ImportCandidate>,
): ImportCandidate[] {
  const fresh: ImportCandidate[] = [];
  for (const [key, candidate] of next) {
    if (previous?.get(key)?.projection.version !== candidate.projection.version) {
      fresh.push(candidate);
    }
  }
  return fresh;
}
