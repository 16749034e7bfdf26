/**
 * The projector's output held to the projection limits (see
 * `projection-limits.ts`), as the exporter writes it: a projection over a
 * limit keeps its routes, in their order (kind, namespace, name), while they
 * fit, and each route that does not fit is left out with a `too_large`
 * {@link RouteRejection}, the way an invalid route is; later routes that do
 * fit are still kept. Its backend TLS entries are held to the byte limit the
 * same way, before the routes (a policy left out is `too_large` too). The content then stays within `maxBytes` minus the
 * room the origin and version stamps need. Pure and deterministic.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import {
  type BackendTls,
  BackendTlsSchema,
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
  /** One `too_large` rejection per route left out, in route order. */
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
  const tls = limitBackendTls(projection, budget);
  let bytes = tls.bytes;
  let rules = 0;
  const kept: Route[] = [];
  const rejections: RouteRejection[] = [...tls.rejections];
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
      backendTls: tls.kept,
    }),
    rejections,
  };
}

/**
 * The backend TLS entries that fit in `budget` with nothing but the
 * projection's other non-route fields, in order (they come before the
 * routes: without its entry a port is called in plaintext), the bytes then
 * taken, and a `too_large` rejection of the policy of each entry left out.
 */
function limitBackendTls(
  projection: ServiceConfigProjection,
  budget: number,
): { kept: BackendTls[]; bytes: number; rejections: RouteRejection[] } {
  const base = { ...projection, routes: [], backendTls: [] };
  let bytes = toBinary(ServiceConfigProjectionSchema, base).length;
  const kept: BackendTls[] = [];
  const rejections: RouteRejection[] = [];
  for (const entry of projection.backendTls) {
    const size = toBinary(BackendTlsSchema, entry).length;
    const field = 1 + varintSize(size) + size; // the tag of field 6, the length, the entry
    if (bytes + field <= budget) {
      kept.push(entry);
      bytes += field;
      continue;
    }
    const target = entry.port === 0 ? "every port" : `port ${entry.port}`;
    rejections.push({
      route: { kind: "BackendTLSPolicy", namespace: entry.policyNamespace, name: entry.policyName },
      reason: "too_large",
      message: `the projection of ${projection.service} takes at most ${budget} bytes (unstamped); this policy's settings for ${target} (${field} bytes, CA certificates included) do not fit after the ${bytes} taken`,
      services: [projection.service],
    });
  }
  return { kept, bytes, rejections };
}
