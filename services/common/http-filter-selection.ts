/**
 * Which of a service's HTTP filters (the projection's `http_filters`, the
 * HTTPFilter escape hatch) run for a request to one of its ports, in the
 * order they run. Not a routing decision: the filters run before the
 * route's rule, whatever rule matches; the evaluator does not run them, and
 * `aetherctl explain` reports them next to its decision. Pure.
 */
import type {
  HttpFilter,
  ServiceConfigProjection,
} from "../../gen/aether/registry/v1/projection_pb.js";

/**
 * The filters of `projection` that target `port` (a target with port 0
 * targets every port), in the projection's order, which is the run order.
 * Empty when there is no projection.
 */
export function httpFiltersForPort(
  projection: ServiceConfigProjection | undefined,
  port: number,
): HttpFilter[] {
  if (projection === undefined) return [];
  return projection.httpFilters.filter((filter) =>
    filter.targets.some((target) => target.port === 0 || target.port === port),
  );
}
