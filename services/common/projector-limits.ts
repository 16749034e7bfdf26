/**
 * The projector's output held to the projection limits (see
 * `projection-limits.ts`), as the exporter writes it: a projection over a
 * limit keeps its HTTP filters, in run order, then its routes, in their order
 * (kind, namespace, name), while they fit, and each filter or route that does
 * not fit is left out with a `too_large` {@link RouteRejection}, the way an
 * invalid one is; later ones that do fit are still kept. Filters come first:
 * they apply to every request of the service, and their bytes are bounded
 * (inline Lua and Wasm configuration at most 64 KiB each). The content then stays within `maxBytes` minus the
 * room the origin and version stamps need. Pure and deterministic.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import {
  type HttpFilter,
  HttpFilterSchema,
  type Route,
  RouteKind,
  RouteSchema,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import {
  countRules,
  encodedSizeBound,
  type ProjectionLimits,
  STAMP_ALLOWANCE,
} from "./projection-limits.js";
import type { RouteRejection } from "./projector.js";

/** What {@link limitProjection} leaves of a projection. */
export interface LimitedProjection {
  /** The projection itself when it is within the limits, else a copy with the routes that fit. */
  readonly projection: ServiceConfigProjection;
  /** One `too_large` rejection per filter, then per route, left out, in their order. */
  readonly rejections: RouteRejection[];
}

/** The bytes a varint takes. */
function varintSize(n: number): number {
  let size = 1;
  for (let rest = n; rest >= 0x80; rest = Math.floor(rest / 0x80)) size++;
  return size;
}

/**
 * Holds `projection` (unstamped: no origin, no version) to `limits`; see the
 * module comment. A projection far within the limits is returned as it is
 * without being encoded (see `encodedSizeBound`).
 */
export function limitProjection(
  projection: ServiceConfigProjection,
  limits: ProjectionLimits,
): LimitedProjection {
  const budget = limits.maxBytes - STAMP_ALLOWANCE;
  if (
    projection.routes.length <= limits.maxRoutes &&
    countRules(projection) <= limits.maxRules &&
    encodedSizeBound(projection) <= budget
  ) {
    return { projection, rejections: [] };
  }
  const { service } = projection;
  const empty = { ...projection, routes: [], httpFilters: [] };
  let bytes = toBinary(ServiceConfigProjectionSchema, empty).length;
  const filters: HttpFilter[] = [];
  const rejections: RouteRejection[] = [];
  for (const filter of projection.httpFilters) {
    const size = toBinary(HttpFilterSchema, filter).length;
    const field = 1 + varintSize(size) + size; // the tag of field 5, the length, the filter
    if (bytes + field > budget) {
      rejections.push({
        route: { kind: "HTTPFilter", namespace: filter.namespace, name: filter.name },
        reason: "too_large",
        message: `the projection of ${service} takes at most ${budget} bytes (unstamped); this filter's ${field} do not fit after the ${bytes} taken`,
        services: [service],
      });
      continue;
    }
    filters.push(filter);
    bytes += field;
  }
  let rules = 0;
  const kept: Route[] = [];
  for (const route of projection.routes) {
    const size = toBinary(RouteSchema, route).length;
    const field = 1 + varintSize(size) + size; // the tag of field 4, the length, the route
    const ruleCount = route.rules.length;
    let problem: string | undefined;
    if (kept.length >= limits.maxRoutes) {
      problem = `the projection of ${service} holds at most ${limits.maxRoutes} routes, and as many come before this one`;
    } else if (rules + ruleCount > limits.maxRules) {
      problem = `the projection of ${service} holds at most ${limits.maxRules} rules; this route's ${ruleCount} do not fit after the ${rules} of the routes before it`;
    } else if (bytes + field > budget) {
      problem = `the projection of ${service} takes at most ${budget} bytes (unstamped); this route's ${field} do not fit after the ${bytes} taken`;
    }
    if (problem !== undefined) {
      rejections.push({
        route: {
          kind: route.kind === RouteKind.GRPC ? "GRPCRoute" : "HTTPRoute",
          namespace: route.namespace,
          name: route.name,
        },
        reason: "too_large",
        message: problem,
        services: [service],
      });
      continue;
    }
    kept.push(route);
    bytes += field;
    rules += ruleCount;
  }
  if (rejections.length === 0) return { projection, rejections };
  return {
    projection: create(ServiceConfigProjectionSchema, {
      ...projection,
      routes: kept,
      httpFilters: filters,
    }),
    rejections,
  };
}
