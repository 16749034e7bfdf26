/**
 * The projector: from a snapshot of Kubernetes objects (HTTPRoute and
 * GRPCRoute, Service, Namespace, ServiceExport, ReferenceGrant) to one
 * `ServiceConfigProjection` per exported service, with GAMMA (mesh)
 * semantics. The hub's export controller and the agent's local (class-2)
 * routes both use it, so exported config and local routing cannot drift.
 *
 * Pure and deterministic: no I/O, no clock, no randomness; the same objects
 * in any order give byte-identical projections. Invalid input never throws:
 * a route that the Gateway API would not accept, or that the contract cannot
 * carry, is left out with a {@link RouteRejection}; the rest of the service's
 * routes are still projected.
 */
import { create } from "@bufbuild/protobuf";
import {
  type ParentRef,
  ParentRefSchema,
  type Route,
  RouteRole,
  RouteSchema,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "./kube-object.js";
import { attachBackendTls, type PolicyProblem } from "./projector-backend-tls.js";
import { field, isJsonObject, type JsonObject, problemOfError } from "./projector-fields.js";
import { attachHttpFilters } from "./projector-http-filter-attach.js";
import {
  compareStrings,
  createObjectIndex,
  GRPC_ROUTE,
  getOrCreate,
  HTTP_ROUTE,
  type ObjectIndex,
  SERVICE_EXPORT,
  type ServiceInfo,
} from "./projector-index.js";
import { projectMeshConfig } from "./projector-mesh-config.js";
import { convertRoute, type RouteProblem } from "./projector-route.js";
import { attachVirtualHosts } from "./projector-virtual-host.js";
import { checkServiceName } from "./service-name.js";

/** The object index and its object types, for callers of {@link projectRoute}. */
export {
  BACKEND_TLS_POLICY,
  CONFIG_MAP,
  createObjectIndex,
  GRPC_ROUTE,
  HTTP_FILTER,
  HTTP_ROUTE,
  MESH_CONFIG,
  NAMESPACE,
  type ObjectIndex,
  type ObjectType,
  REFERENCE_GRANT,
  SERVICE,
  SERVICE_EXPORT,
  type ServiceInfo,
  type ServicePortInfo,
} from "./projector-index.js";

/**
 * Every reason a {@link RouteRejection} can carry, for metrics that
 * pre-register their label values. See {@link RouteRejection} for meanings.
 */
export const ROUTE_REJECTION_REASONS: readonly string[] = [
  "invalid_object",
  "invalid_value",
  "invalid_regex",
  "invalid_duration",
  "invalid_filter",
  "unknown_filter",
  "weight_out_of_range",
  "unsupported_field",
  "duplicate_object",
  "no_matching_parent",
  "too_large",
  "backend_not_found",
  "unsupported_backend",
  "ref_not_permitted",
  "invalid_kind",
  "invalid_ca_certificate_ref",
  "unknown_target",
  "conflicted",
];

/** Every reason a {@link RouteWarning} can carry, for metrics that pre-register label values. */
export const ROUTE_WARNING_REASONS: readonly string[] = [
  "backend_not_found",
  "unsupported_backend",
  "ref_not_permitted",
  "no_matching_parent",
  "unknown_target",
  "conflicted",
];

/**
 * Identifies a route object, or a policy object the projector reads the same
 * way (a BackendTLSPolicy, an HTTPFilter, a VirtualHost or a MeshConfig,
 * whose problems are reported like a route's).
 */
export interface RouteRef {
  /** The object's kind. */
  readonly kind:
    | "HTTPRoute"
    | "GRPCRoute"
    | "HTTPFilter"
    | "BackendTLSPolicy"
    | "VirtualHost"
    | "MeshConfig";
  /** The route's namespace (`""` when the object has none). */
  readonly namespace: string;
  /** The route's name (`""` when the object has none). */
  readonly name: string;
}

/**
 * A route left out of the projections, and why. Also the shape of a
 * {@link RouteWarning}.
 *
 * Reasons (snake_case, stable, usable as metric labels): `invalid_object`
 * (wrong JSON type, missing required field), `invalid_value` (a value the
 * Gateway API does not allow), `invalid_regex`, `invalid_duration`,
 * `invalid_filter` (a filter combination the API forbids, such as a repeated
 * filter or ReplacePrefixMatch without a PathPrefix match), `unknown_filter`,
 * `weight_out_of_range`, `unsupported_field` (a field the contract cannot
 * carry, such as a rule's `sessionPersistence`), `duplicate_object`
 * (several different objects with one identity in the snapshot),
 * `no_matching_parent` (every parentRef to the
 * service names a port it does not have), `too_large` (the route does not fit
 * in its service's projection within the projection limits; given by
 * `limitProjection` in `projector-limits.ts`, not by the projector).
 * HTTPFilters are rejected the same way (kind `HTTPFilter`), with the reasons
 * above and `unknown_target` (a targetRef names a Service, or a port of
 * one, that does not exist), `invalid_kind` (a targetRef to anything but a
 * Service), `backend_not_found`, `unsupported_backend` and
 * `ref_not_permitted` (an extension's backendRef that cannot be resolved:
 * see `convertHttpFilter`). Warnings use `backend_not_found`,
 * `unsupported_backend` and `ref_not_permitted` (unresolvable backendRefs),
 * and `no_matching_parent` (one of several parentRefs does not match).
 *
 * A BackendTLSPolicy is left out (or, when it is still carried on another
 * target, warned about) with the same reasons where they fit, and:
 * `invalid_kind` (a caCertificateRef to anything but a ConfigMap),
 * `invalid_ca_certificate_ref` (a missing ConfigMap, or one without a PEM
 * certificate under `ca.crt`), `unknown_target` (a targetRef to a Service
 * that does not exist, or to a sectionName it has no port for) and
 * `conflicted` (an older policy, or one first by namespace/name, targets the
 * same Service and sectionName).
 *
 * A VirtualHost (kind `VirtualHost`) is left out with the same reasons where
 * they fit: `invalid_kind` (a targetRef to anything but a Service),
 * `invalid_value` (a host name that is not RFC 1123, or listed twice),
 * `unknown_target` and `conflicted` (an older VirtualHost, or one first by
 * namespace/name, holds one of its host names for another Service).
 *
 * A MeshConfig (kind `MeshConfig`, namespace `""`: it is cluster-scoped) is
 * left out with the same reasons where they fit (`invalid_object`,
 * `unsupported_field`, `invalid_duration`, `invalid_value`,
 * `duplicate_object`), and `invalid_value` for any name but `default` (one
 * mesh-wide MeshConfig per origin). The `default` one's problems name the
 * service `@mesh`, the mesh record it would have made.
 */
export interface RouteRejection {
  /** The route. */
  readonly route: RouteRef;
  /** The machine-readable reason. */
  readonly reason: string;
  /** A sentence naming the field path, for example `spec.rules[1].matches[0].path.value …`. */
  readonly message: string;
  /** The in-scope services the route attaches to, sorted (empty from {@link projectRoute}). */
  readonly services: readonly string[];
}

/**
 * A problem in a route that was projected anyway: a backendRef that cannot be
 * resolved (the backend stays in the projection as an unresolved backend, a
 * `Backend` with an empty `service`, so requests routed to it get a 500, or
 * UNAVAILABLE for a GRPCRoute, as the Gateway API requires), a RequestMirror
 * whose backend cannot be resolved (left out), or a parentRef that matches no
 * port of its service.
 */
export type RouteWarning = RouteRejection;

/** The result of {@link projectServices}. */
export interface ProjectorOutput {
  /**
   * One projection per in-scope service, sorted by service, with `version`
   * and `originCluster` empty (the export controller stamps them). Its routes
   * are sorted by kind, namespace and name, rules in object order. When the
   * snapshot holds a valid MeshConfig named `default`, the origin's mesh
   * record (service `@mesh`, only `meshConfig` set) is among them, in its
   * sorted place.
   */
  readonly projections: ServiceConfigProjection[];
  /** The routes left out, sorted by kind, namespace, name, then message. */
  readonly rejections: RouteRejection[];
  /** Problems in projected routes, sorted like the rejections. */
  readonly warnings: RouteWarning[];
}

/** Options of {@link projectServices}. */
export interface ProjectorOptions {
  /**
   * Project every Service that a route attaches to, exported or not (in
   * addition to the exported ones). For the conformance harness and for the
   * agent's local class-2 routes. Default false: only Services with a
   * ServiceExport of the same namespace and name are projected.
   */
  readonly exportAll?: boolean;
  /**
   * Require a ReferenceGrant for backendRefs to another namespace, as for
   * Gateway routes. Default false: GEP-1294 says mesh routes may send traffic
   * to backendRefs in any namespace without one.
   */
  readonly requireReferenceGrants?: boolean;
}

/** Options of {@link projectRoute}. */
export interface ProjectRouteOptions {
  /**
   * Resolve backendRefs with mesh (GAMMA) semantics: no ReferenceGrant is
   * needed for another namespace. Default false (Gateway semantics: a
   * cross-namespace backendRef without a ReferenceGrant is unresolved).
   */
  readonly mesh?: boolean;
}

/** The result of {@link projectRoute}: the route with its warnings, or why it was rejected. */
export type ProjectedRoute =
  | { readonly route: Route; readonly warnings: RouteWarning[] }
  | { readonly rejection: RouteRejection };

/**
 * Projects ONE route object into a contract `Route`, ignoring its parentRefs
 * (parentRefs left empty, role UNSPECIFIED): the conformance harness uses it
 * to attach routes to Gateways, and {@link projectServices} uses it
 * internally. Gateway API defaults are applied (a rule without matches, or a
 * match without a path, matches `PathPrefix /`; weight 1; redirect status
 * 302; CORS maxAge 5) and every field is validated.
 *
 * Backend references are resolved against `objects` (pass an index from
 * {@link createObjectIndex} when projecting many routes): the Service and its
 * port must exist, and a cross-namespace reference needs a ReferenceGrant
 * unless `options.mesh` is set. An unresolvable backendRef does not reject
 * the route; it becomes an unresolved backend (see {@link RouteWarning}) and
 * a warning. Never throws; the rejection's `services` is empty.
 */
export function projectRoute(
  route: KubeObject,
  objects: readonly KubeObject[] | ObjectIndex,
  options: ProjectRouteOptions = {},
): ProjectedRoute {
  const index = Array.isArray(objects)
    ? createObjectIndex(objects as readonly KubeObject[])
    : (objects as ObjectIndex);
  return projectOne(route, index, options.mesh ?? false);
}

function projectOne(route: KubeObject, index: ObjectIndex, mesh: boolean): ProjectedRoute {
  try {
    const converted = convertRoute(route, index, { mesh });
    const ref = routeRefOf(route);
    return { route: converted.route, warnings: converted.warnings.map((p) => problem(ref, p, [])) };
  } catch (error) {
    return { rejection: problem(routeRefOf(route), problemOfError(error), []) };
  }
}

/**
 * Projects the services in scope: every Service with a ServiceExport of the
 * same namespace and name (and, with `options.exportAll`, every Service a
 * route attaches to). A route attaches to a Service through a parentRef with
 * group `""` and kind `Service` (namespace defaulting to the route's); it is
 * a producer route when it lives in the Service's namespace and a consumer
 * route otherwise, and appears in the projection of every in-scope Service it
 * names, with the parentRefs that name that Service (a `sectionName` resolved
 * to the port it names). Routes whose parents are only Gateways, or only
 * out-of-scope Services, are ignored.
 *
 * Valid HTTPFilters whose targetRefs name a projected Service ride in its
 * projection as `httpFilters`, in run order (see `attachHttpFilters`); a
 * filter never brings a Service into scope, and one without targetRefs
 * (only for routes' ExtensionRef filters, resolved in the caller's cluster)
 * is never projected.
 *
 * Each projection carries the BackendTLSPolicies that target its Service
 * (see `projector-backend-tls.ts`) and the VirtualHosts that name it (see
 * `projector-virtual-host.ts`); neither ever brings a Service into scope.
 *
 * A valid MeshConfig named `default` adds the mesh record `@mesh` (see
 * `projector-mesh-config.ts`), whatever the scope options.
 *
 * An exported service with no valid routes still gets a projection (with no
 * routes). Rejected routes are left out and reported, never the whole service.
 * Deterministic: the same objects in any order give byte-identical output.
 * Never throws. The projections may share nested rule messages; treat them
 * as immutable.
 */
export function projectServices(
  objects: readonly KubeObject[],
  options: ProjectorOptions = {},
): ProjectorOutput {
  const index = createObjectIndex(objects);
  const mesh = !(options.requireReferenceGrants ?? false);
  const exportAll = options.exportAll ?? false;
  const routes = new Map<string, Route[]>();
  for (const service of exportedServices(index)) routes.set(service.key, []);
  const inScope = (key: string, service: ServiceInfo | undefined): boolean =>
    routes.has(key) || (exportAll && service !== undefined && isValidKey(service.key));

  const rejections: RouteRejection[] = [];
  const warnings: RouteWarning[] = [];
  for (const type of [HTTP_ROUTE, GRPC_ROUTE]) {
    for (const object of index.unidentified(type)) {
      const rejection = projectOne(object, index, mesh);
      if ("rejection" in rejection) rejections.push(rejection.rejection);
    }
    for (const object of index.list(type)) {
      const parents = serviceParents(object, index, inScope);
      if (parents.size === 0) continue;
      const services = [...parents.keys()].sort(compareStrings);
      const ref = routeRefOf(object);
      if (index.isAmbiguous(type, ref.namespace, ref.name)) {
        const message = `the snapshot holds several different ${ref.kind} objects named ${ref.namespace}/${ref.name}`;
        rejections.push(problem(ref, { reason: "duplicate_object", message }, services));
        continue;
      }
      const projected = projectOne(object, index, mesh);
      if ("rejection" in projected) {
        rejections.push({ ...projected.rejection, services });
        continue;
      }
      for (const warning of projected.warnings) warnings.push({ ...warning, services });
      for (const service of services) {
        const attachment = attach(projected.route, parents.get(service) as ParentSet);
        for (const p of attachment.problems) {
          const list = attachment.route === undefined ? rejections : warnings;
          list.push(problem(ref, p, [service]));
        }
        if (attachment.route === undefined) continue;
        getOrCreate(routes, service, () => []).push(attachment.route);
      }
    }
  }

  const attached = attachHttpFilters(index, {
    mesh,
    inScope,
    projected: (key) => routes.has(key),
  });
  rejections.push(...attached.rejections);
  const backendTls = attachBackendTls(index, (key) => routes.has(key));
  for (const p of backendTls.rejections) rejections.push(policyRejection(p));
  for (const p of backendTls.warnings) warnings.push(policyRejection(p));
  const virtualHosts = attachVirtualHosts(index, (key) => routes.has(key));
  for (const p of virtualHosts.rejections) rejections.push(policyRejection(p, "VirtualHost"));
  const meshConfig = projectMeshConfig(index);
  for (const p of meshConfig.rejections) rejections.push(policyRejection(p, "MeshConfig"));
  const projections = [...routes.keys()].sort(compareStrings).map((service) =>
    create(ServiceConfigProjectionSchema, {
      service,
      originCluster: "",
      version: "",
      routes: (routes.get(service) as Route[]).sort(compareRoutes),
      httpFilters: attached.filters.get(service) ?? [],
      backendTls: backendTls.entries.get(service) ?? [],
      virtualHosts: virtualHosts.entries.get(service) ?? [],
    }),
  );
  if (meshConfig.projection !== undefined) {
    projections.push(meshConfig.projection);
    projections.sort((a, b) => compareStrings(a.service, b.service));
  }
  return {
    projections,
    rejections: rejections.sort(compareRouteProblems),
    warnings: warnings.sort(compareRouteProblems),
  };
}

/** The exported Services: a ServiceExport with a Service of the same namespace and name. */
function exportedServices(index: ObjectIndex): ServiceInfo[] {
  const services: ServiceInfo[] = [];
  for (const serviceExport of index.list(SERVICE_EXPORT)) {
    const { namespace, name } = serviceExport.metadata as { namespace: string; name: string };
    const service = index.service(namespace, name);
    if (service !== undefined && isValidKey(service.key)) services.push(service);
  }
  return services;
}

function isValidKey(key: string): boolean {
  return checkServiceName(key) === undefined;
}

/** A parentRef naming a Service, as read from the route (validated by the conversion). */
interface ServiceParentRef {
  readonly index: number;
  readonly port: number | undefined;
  readonly sectionName: string | undefined;
}

interface ParentSet {
  readonly service: ServiceInfo;
  readonly role: RouteRole;
  readonly refs: ServiceParentRef[];
}

/**
 * The in-scope Services a route's parentRefs name, read leniently (the full
 * validation happens when the route is converted): parentRefs with group
 * `""` and kind `Service`.
 */
function serviceParents(
  object: KubeObject,
  index: ObjectIndex,
  inScope: (key: string, service: ServiceInfo | undefined) => boolean,
): Map<string, ParentSet> {
  const parents = new Map<string, ParentSet>();
  const routeNamespace = (object.metadata as JsonObject).namespace as string;
  const spec = isJsonObject(object.spec) ? object.spec : {};
  const list = field(spec, "parentRefs");
  (Array.isArray(list) ? list : []).forEach((raw: unknown, i) => {
    if (!isJsonObject(raw) || field(raw, "group") !== "" || field(raw, "kind") !== "Service")
      return;
    const name = field(raw, "name");
    const namespace = field(raw, "namespace") ?? routeNamespace;
    if (typeof name !== "string" || typeof namespace !== "string") return;
    const key = `${namespace}/${name}`;
    const service = index.service(namespace, name);
    if (service === undefined || !inScope(key, service)) return;
    const port = field(raw, "port");
    const sectionName = field(raw, "sectionName");
    const role = namespace === routeNamespace ? RouteRole.PRODUCER : RouteRole.CONSUMER;
    getOrCreate(parents, key, () => ({ service, role, refs: [] })).refs.push({
      index: i,
      port: typeof port === "number" ? port : undefined,
      sectionName: typeof sectionName === "string" ? sectionName : undefined,
    });
  });
  return parents;
}

/**
 * Attaches a converted route to one service: its role and the parentRefs
 * that name the service. A parentRef whose port or sectionName names no port
 * of the service does not attach; when none attaches, the route is not
 * attached at all.
 */
function attach(
  route: Route,
  parents: ParentSet,
): { route: Route | undefined; problems: RouteProblem[] } {
  const problems: RouteProblem[] = [];
  const parentRefs: ParentRef[] = [];
  for (const ref of parents.refs) {
    const ports = parents.service.ports;
    const named =
      ref.sectionName === undefined ? undefined : ports.find((p) => p.name === ref.sectionName);
    const byPort = ref.port === undefined ? undefined : ports.find((p) => p.port === ref.port);
    const port = named ?? byPort;
    const mismatch =
      (ref.sectionName !== undefined && named === undefined) ||
      (ref.port !== undefined && byPort === undefined) ||
      (named !== undefined && byPort !== undefined && named !== byPort);
    if (mismatch) {
      const wanted = [
        ref.sectionName === undefined ? "" : `sectionName ${JSON.stringify(ref.sectionName)}`,
        ref.port === undefined ? "" : `port ${ref.port}`,
      ]
        .filter((s) => s !== "")
        .join(" and ");
      problems.push({
        reason: "no_matching_parent",
        message: `spec.parentRefs[${ref.index}] names ${wanted} of Service ${parents.service.key}, which has no such port`,
      });
      continue;
    }
    const parentRef = create(ParentRefSchema, {
      service: parents.service.key,
      port: port?.port ?? 0,
      sectionName: ref.sectionName ?? "",
    });
    const same = (p: ParentRef) =>
      p.port === parentRef.port && p.sectionName === parentRef.sectionName;
    if (!parentRefs.some(same)) parentRefs.push(parentRef);
  }
  if (parentRefs.length === 0) return { route: undefined, problems };
  return { route: create(RouteSchema, { ...route, role: parents.role, parentRefs }), problems };
}

function routeRefOf(object: KubeObject): RouteRef {
  const metadata: unknown = isJsonObject(object) ? object.metadata : undefined;
  const read = (key: string): string => {
    const value = isJsonObject(metadata) ? field(metadata, key) : undefined;
    return typeof value === "string" ? value : "";
  };
  const kind = isJsonObject(object) && object.kind === "GRPCRoute" ? "GRPCRoute" : "HTTPRoute";
  return { kind, namespace: read("namespace"), name: read("name") };
}

function policyRejection(
  p: PolicyProblem,
  kind: "BackendTLSPolicy" | "VirtualHost" | "MeshConfig" = "BackendTLSPolicy",
): RouteRejection {
  const route: RouteRef = { kind, namespace: p.namespace, name: p.name };
  return { route, reason: p.reason, message: p.message, services: p.services };
}

function problem(route: RouteRef, p: RouteProblem, services: readonly string[]): RouteRejection {
  return { route, reason: p.reason, message: p.message, services };
}

function compareRoutes(a: Route, b: Route): number {
  return (
    a.kind - b.kind || compareStrings(a.namespace, b.namespace) || compareStrings(a.name, b.name)
  );
}

/**
 * Orders route problems (rejections or warnings) the way {@link ProjectorOutput}
 * lists them: by route kind, namespace and name, then message, reason and services.
 */
export function compareRouteProblems(a: RouteRejection, b: RouteRejection): number {
  return (
    compareStrings(a.route.kind, b.route.kind) ||
    compareStrings(a.route.namespace, b.route.namespace) ||
    compareStrings(a.route.name, b.route.name) ||
    compareStrings(a.message, b.message) ||
    compareStrings(a.reason, b.reason) ||
    compareStrings(a.services.join(","), b.services.join(","))
  );
}
