/**
 * What a new state takes away from the agent's imported state: the
 * candidates it deletes. They are applied, the registrar being the
 * authority, but never unnoticed: the imported state logs and counts them.
 * (An older version never replaces a newer one: the candidate set refuses
 * it as a `rollback` rejection, see `candidate-set.ts`.) Pure, no I/O.
 */
import type { ImportCandidate } from "../../../services/common/import-policy.js";

/** What a new state takes away; see {@link appliedLoss}. */
export interface AppliedLoss {
  /** The candidates of still-requested services the new state no longer has. */
  readonly deleted: readonly ImportCandidate[];
}

const NONE: AppliedLoss = { deleted: [] };

/**
 * Compares `previous` with `next`, both keyed by candidate key: a key of a
 * `requested` service that `next` lacks is a delete (a service that left
 * the dependency set is not). Nothing without a previous state.
 */
export function appliedLoss(
  previous: ReadonlyMap<string, ImportCandidate> | undefined,
  next: ReadonlyMap<string, ImportCandidate>,
  requested: ReadonlySet<string>,
): AppliedLoss {
  if (previous === undefined) return NONE;
  const deleted: ImportCandidate[] = [];
  for (const [key, candidate] of previous) {
    if (!next.has(key) && requested.has(candidate.service)) deleted.push(candidate);
  }
  return deleted.length === 0 ? NONE : { deleted };
}
