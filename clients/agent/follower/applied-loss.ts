/**
 * What a new state takes away from the agent's imported state: the
 * candidates it deletes and the ones it rolls back (an older version of an
 * origin's projection replacing a newer one). Both are applied, the
 * registrar being the authority, but neither may go unnoticed: the imported
 * state logs and counts them. Pure, no I/O.
 */
import { isRollback } from "../../../services/common/import-loss.js";
import type { ImportCandidate } from "../../../services/common/import-policy.js";

/** A candidate replaced by an older version of itself. */
export interface Rollback {
  /** The candidate replaced. */
  readonly previous: ImportCandidate;
  /** The older one that replaced it. */
  readonly next: ImportCandidate;
}

/** What a new state takes away; see {@link appliedLoss}. */
export interface AppliedLoss {
  /** The candidates of still-requested services the new state no longer has. */
  readonly deleted: readonly ImportCandidate[];
  /** The candidates replaced by an older version of themselves. */
  readonly rolledBack: readonly Rollback[];
}

const NONE: AppliedLoss = { deleted: [], rolledBack: [] };

/**
 * Compares `previous` with `next`, both keyed by candidate key: a key of a
 * `requested` service that `next` lacks is a delete (a service that left
 * the dependency set is not), and a key whose version went back is a
 * rollback. Nothing without a previous state.
 */
export function appliedLoss(
  previous: ReadonlyMap<string, ImportCandidate> | undefined,
  next: ReadonlyMap<string, ImportCandidate>,
  requested: ReadonlySet<string>,
): AppliedLoss {
  if (previous === undefined) return NONE;
  const deleted: ImportCandidate[] = [];
  const rolledBack: Rollback[] = [];
  for (const [key, candidate] of previous) {
    const after = next.get(key);
    if (after === undefined) {
      if (requested.has(candidate.service)) deleted.push(candidate);
    } else if (
      after !== candidate &&
      isRollback(candidate.projection.version, after.projection.version)
    ) {
      rolledBack.push({ previous: candidate, next: after });
    }
  }
  return deleted.length === 0 && rolledBack.length === 0 ? NONE : { deleted, rolledBack };
}
