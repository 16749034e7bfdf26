/**
 * Rollback refusal: an importer's high-water marks, the newest version it
 * accepted of each origin's projection of each service. A candidate older
 * than its mark is a replayed old value (or an origin whose clock went back)
 * and is refused as `rollback`; the importer keeps the newer projection it
 * had. Equal versions pass (the same value listed again).
 *
 * A mark moves only forward and only on a candidate the import policy
 * accepted, so a value rejected for any other reason (a forged far-future
 * `version_out_of_range` above all) never raises it. A mark survives a
 * delete of its key: the old value written back after a delete is the
 * replay this exists to stop. The cost is an origin that deletes a service
 * and then re-exports it with a lower version (its clock went back across a
 * restart, where its exporter cannot build on the deleted value): refused,
 * counted and shown as `rollback`, until its clock passes the mark.
 *
 * Pure, no I/O: the registrar holds its marks for its lifetime, the agent
 * persists them in its last-known cache.
 */
import type { ImportRejection, PolicyCandidate } from "./import-policy.js";
import { parseVersion } from "./projection-version.js";

/** One origin's mark for one service, as persisted (the agent's cache). */
export interface VersionMark {
  /** The origin cluster. */
  readonly origin: string;
  /** The service. */
  readonly service: string;
  /** The newest accepted version (RFC 3339, as the projection carried it). */
  readonly version: string;
}

/** The marks of one importer; see the module comment. */
export interface VersionMarks {
  /** How many (origin, service) pairs have a mark. */
  readonly size: number;
  /**
   * The `rollback` rejection of `candidate` when its version is older than
   * its mark; undefined otherwise (also when either version does not parse:
   * the import policy judges those). Changes nothing.
   */
  check<T extends PolicyCandidate>(candidate: T): ImportRejection<T> | undefined;
  /** Raises the mark of an accepted `candidate` to its version (never lowers it). */
  accept(candidate: PolicyCandidate): void;
  /** Every mark, by origin then service. */
  list(): VersionMark[];
}

const markKey = (origin: string, service: string) => `${origin}\u0000${service}`;

/** Creates marks, starting from `initial` (the highest of repeated pairs wins; unparsable ones are skipped). */
export function createVersionMarks(initial: Iterable<VersionMark> = []): VersionMarks {
  /** The mark of each pair: its parsed instant and the version text it came from. */
  const marks = new Map<string, { nanos: bigint; mark: VersionMark }>();
  /** The keys, sorted; undefined since a key was added (raising a mark keeps the order). */
  let order: string[] | undefined;

  function raise(mark: VersionMark): void {
    const nanos = parseVersion(mark.version);
    if (nanos === undefined) return;
    const key = markKey(mark.origin, mark.service);
    const held = marks.get(key);
    if (held !== undefined && nanos <= held.nanos) return;
    if (held === undefined) order = undefined;
    marks.set(key, { nanos, mark });
  }

  for (const mark of initial) raise(mark);

  return {
    get size() {
      return marks.size;
    },
    check(candidate) {
      const held = marks.get(markKey(candidate.origin, candidate.service));
      const nanos = parseVersion(candidate.projection.version);
      if (held === undefined || nanos === undefined || nanos >= held.nanos) return undefined;
      return {
        candidate,
        reason: "rollback",
        message: `projection of ${candidate.service} from ${candidate.origin} has version ${candidate.projection.version}, older than ${held.mark.version} this importer already accepted: a replayed old value (or the origin's clock went back); the newer one stays`,
      };
    },
    accept(candidate) {
      const { origin, service } = candidate;
      raise({ origin, service, version: candidate.projection.version });
    },
    list() {
      order ??= [...marks.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      return order.map((key) => (marks.get(key) as { mark: VersionMark }).mark);
    },
  };
}
