/**
 * The export controller's hold on projection sizes: every projection an
 * incremental update gives is held to the projection limits (see
 * `limitProjection`), and the `too_large` rejections that leaves are kept
 * per service, so that an update re-projecting only some services still
 * reports every oversized one. Synchronous, no I/O.
 */
import type { ServiceConfigProjection } from "../../../gen/aether/registry/v1/projection_pb.js";
import {
  DEFAULT_PROJECTION_LIMITS,
  type ProjectionLimits,
} from "../../common/projection-limits.js";
import { compareRouteProblems, type RouteRejection } from "../../common/projector.js";
import type { ProjectionUpdate } from "../../common/projector-incremental.js";
import { limitProjection } from "../../common/projector-limits.js";

/** An update's projections within the limits, and every rejection in force. */
export interface LimitedUpdate {
  /** The update's projections, each within the limits (in the update's order). */
  readonly projections: ServiceConfigProjection[];
  /**
   * The update's rejections and the `too_large` ones of every in-scope
   * service, sorted as the projector sorts rejections.
   */
  readonly rejections: RouteRejection[];
}

/** See {@link createProjectionLimiter}. */
export interface ProjectionLimiter {
  /** The limits applied. */
  readonly limits: ProjectionLimits;
  /**
   * Holds `update`'s projections to the limits and records their `too_large`
   * rejections: a full update replaces every service's, an incremental one
   * those of the services it re-projected or removed.
   */
  apply(update: ProjectionUpdate): LimitedUpdate;
}

/** Creates a limiter for `limits` (default `DEFAULT_PROJECTION_LIMITS`), with no rejections. */
export function createProjectionLimiter(
  limits: ProjectionLimits = DEFAULT_PROJECTION_LIMITS,
): ProjectionLimiter {
  /** The `too_large` rejections of each service that has any. */
  const tooLarge = new Map<string, RouteRejection[]>();
  return {
    limits,
    apply(update) {
      if (update.full) tooLarge.clear();
      for (const service of update.removed) tooLarge.delete(service);
      const projections = update.projections.map((projection) => {
        const limited = limitProjection(projection, limits);
        if (limited.rejections.length > 0) tooLarge.set(projection.service, limited.rejections);
        else tooLarge.delete(projection.service);
        return limited.projection;
      });
      if (tooLarge.size === 0) return { projections, rejections: update.rejections };
      const rejections = [...update.rejections];
      for (const list of tooLarge.values()) for (const r of list) rejections.push(r);
      return { projections, rejections: rejections.sort(compareRouteProblems) };
    },
  };
}
