/**
 * Loss in an import: the decisions the registrar's cache and the agent share
 * about changes that take good config away. (A *rollback*, a projection
 * replaced by an older version of itself, is never applied: see
 * `version-marks.ts`.) A *mass disappearance* is a
 * group of held projections (one origin's, or an agent's whole view)
 * vanishing at once; it is not applied at once but held, the way the export
 * controller holds unexports while its source reports problems. Pure, no I/O.
 */
/**
 * When deletes that arrive together count as a mass disappearance of a group
 * of projections: more than `fraction` of the group's held projections, and
 * at least `minCount` of them.
 */
export interface MassDeleteThreshold {
  /**
   * The share of the group that must be exceeded, in [0, 1]. At 1 nothing
   * ever counts (no more than all of a group can vanish): the guard is off.
   */
  readonly fraction: number;
  /** The fewest vanished projections that can count (at least 1). */
  readonly minCount: number;
}

/** The default share: more than half of a group vanishing at once. */
export const DEFAULT_MASS_DELETE_FRACTION = 0.5;

/**
 * The default minimum, for the registrar and the agent alike: 3, so that an
 * origin's only projection or two (1 of 1) still go at once, while a wipe of
 * a small origin does not. Not more: a cluster that exports a handful of
 * services is exactly the one a higher minimum would let vanish silently.
 */
export const DEFAULT_MASS_DELETE_MIN = 3;

/** The default threshold: more than 50% and at least 3. */
export const DEFAULT_MASS_DELETE_THRESHOLD: MassDeleteThreshold = {
  fraction: DEFAULT_MASS_DELETE_FRACTION,
  minCount: DEFAULT_MASS_DELETE_MIN,
};

/** A threshold that never counts anything as a mass disappearance. */
export const MASS_DELETE_GUARD_OFF: MassDeleteThreshold = { fraction: 1, minCount: 1 };

/**
 * Whether `vanished` of a group's `held` projections vanishing at once is a
 * mass disappearance under `threshold`: at least `minCount` (never fewer
 * than 1) and more than `fraction` of `held`.
 */
export function isMassDisappearance(
  held: number,
  vanished: number,
  threshold: MassDeleteThreshold,
): boolean {
  return vanished >= Math.max(1, threshold.minCount) && vanished > held * threshold.fraction;
}

/** The threshold as a phrase for logs and usage text, e.g. `more than 50% and at least 10`. */
export function describeThreshold(threshold: MassDeleteThreshold): string {
  if (threshold.fraction >= 1) return "off";
  const percent = Math.round(threshold.fraction * 1000) / 10;
  return `more than ${percent}% and at least ${Math.max(1, threshold.minCount)}`;
}
