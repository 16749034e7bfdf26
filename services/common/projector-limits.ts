/**
 * The projector's output held to the projection limits (see
 * `projection-limits.ts`), as the exporter writes it: a projection over a
 * limit keeps, while they fit and in this order: its HTTP filters, in run
 * order; then its backend TLS entries, in their order (port, section name);
 * then its VirtualHost entries (a name left out is not routed to the service
 * at all, which fails closed); then its routes, in their order (kind,
 * namespace, name). Each filter, entry or route that does not fit is left out
 * with a `too_large` {@link RouteRejection} (kind `HTTPFilter`,
 * `BackendTLSPolicy`, `VirtualHost` or the route's), the way an invalid one is; later ones that do fit are still kept.
 * Why this order: filters and backend TLS apply to every request of the
 * service (or of a port), routes only to the requests they match. Filters go
 * first because a filter left out fails open (an ext_authz or AuthN filter
 * not run lets requests through unchecked) and their bytes are bounded
 * (inline Lua and Wasm configuration at most 64 KiB each); a backend TLS entry
 * left out makes the caller call that port in plaintext, which a backend
 * that requires TLS refuses. Both go before the routes. The content then
 * stays within `maxBytes` minus the
 * room the origin and version stamps need. Pure and deterministic.
 */
import { create, type Message, toBinary } from "@bufbuild/protobuf";
import type { GenMessage } from "@bufbuild/protobuf/codegenv2";
import {
  type BackendTls,
  BackendTlsSchema,
  HttpFilterSchema,
  type Route,
  RouteKind,
  RouteSchema,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
  VirtualHostSchema,
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
  /** The projection itself when it is within the limits, else a copy with the filters, backend TLS entries and routes that fit. */
  readonly projection: ServiceConfigProjection;
  /** One `too_large` rejection per filter, backend TLS entry, VirtualHost, then route left out, in their order. */
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
  const base = { ...projection, routes: [], httpFilters: [], backendTls: [], virtualHosts: [] };
  /** The `too_large` rejection of an entry of kind `kind` (`what` in the message) left out. */
  const entryTooLarge =
    (kind: "HTTPFilter" | "VirtualHost", what: string) =>
    (entry: { namespace: string; name: string }, field: number, taken: number): RouteRejection => ({
      route: { kind, namespace: entry.namespace, name: entry.name },
      reason: "too_large",
      message: `the projection of ${service} takes at most ${budget} bytes (unstamped); this ${what}'s ${field} do not fit after the ${taken} taken`,
      services: [service],
    });
  const filters = fitEntries(
    projection.httpFilters,
    HttpFilterSchema,
    toBinary(ServiceConfigProjectionSchema, base).length,
    budget,
    entryTooLarge("HTTPFilter", "filter"),
  );
  const tls = limitBackendTls(projection, budget, filters.bytes);
  const hosts = fitEntries(
    projection.virtualHosts,
    VirtualHostSchema,
    tls.bytes,
    budget,
    entryTooLarge("VirtualHost", "VirtualHost"),
  );
  let bytes = hosts.bytes;
  let rules = 0;
  const kept: Route[] = [];
  const rejections: RouteRejection[] = [
    ...filters.rejections,
    ...tls.rejections,
    ...hosts.rejections,
  ];
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
      httpFilters: filters.kept,
      backendTls: tls.kept,
      virtualHosts: hosts.kept,
    }),
    rejections,
  };
}

/**
 * The entries of one repeated projection field that fit in `budget` after
 * the `bytes` already taken, in order, the bytes then taken, and the
 * rejection `reject` makes of each entry left out (given the bytes its field
 * would take and the bytes taken before it).
 */
function fitEntries<T extends Message>(
  entries: readonly T[],
  schema: GenMessage<T>,
  bytes: number,
  budget: number,
  reject: (entry: T, field: number, taken: number) => RouteRejection,
): { kept: T[]; bytes: number; rejections: RouteRejection[] } {
  let taken = bytes;
  const kept: T[] = [];
  const rejections: RouteRejection[] = [];
  for (const entry of entries) {
    const size = toBinary(schema, entry).length;
    const field = 1 + varintSize(size) + size; // the field's tag (below 16: one byte), the length, the entry
    if (taken + field <= budget) {
      kept.push(entry);
      taken += field;
    } else {
      rejections.push(reject(entry, field, taken));
    }
  }
  return { kept, bytes: taken, rejections };
}

/**
 * The backend TLS entries that fit in `budget` after the `bytes` taken by
 * the projection's other non-route fields and its HTTP filters, in order
 * (they come before the routes: without its entry a port is called in
 * plaintext), the bytes then taken, and a `too_large` rejection of the policy
 * of each entry left out.
 */
function limitBackendTls(
  projection: ServiceConfigProjection,
  budget: number,
  bytes: number,
): { kept: BackendTls[]; bytes: number; rejections: RouteRejection[] } {
  return fitEntries(
    projection.backendTls,
    BackendTlsSchema,
    bytes,
    budget,
    (entry, field, taken) => {
      const target = entry.port === 0 ? "every port" : `port ${entry.port}`;
      return {
        route: {
          kind: "BackendTLSPolicy",
          namespace: entry.policyNamespace,
          name: entry.policyName,
        },
        reason: "too_large",
        message: `the projection of ${projection.service} takes at most ${budget} bytes (unstamped); this policy's settings for ${target} (${field} bytes, CA certificates included) do not fit after the ${taken} taken`,
        services: [projection.service],
      };
    },
  );
}
