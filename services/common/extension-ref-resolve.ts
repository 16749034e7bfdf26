/**
 * Caller-side (class 2) HTTPFilters: a route rule's ExtensionRef filter
 * naming an HTTPFilter (`mesh.aether.dev`, `HTTPFilter`) is resolved by the
 * consumer, against its OWN cluster's HTTPFilters in the route's namespace,
 * into the filter's contents (`ExtensionRef.http_filter`) or why it could
 * not be (`ExtensionRef.unresolved_reason`: the data plane then answers
 * 500). The exporter never does this: only the reference travels. Used by
 * the agent for its local routes and for the imported ones alike ("resolved
 * in the consumer's cluster"). Pure, no I/O.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import {
  type ExtensionRef,
  ExtensionRefSchema,
  type Filter,
  type HttpFilter,
  HttpFilterSchema,
  type Route,
  RouteKind,
  type ServiceConfigProjection,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "./kube-object.js";
import { problemOfError } from "./projector-fields.js";
import { convertHttpFilter } from "./projector-http-filter.js";
import { createObjectIndex, HTTP_FILTER } from "./projector-index.js";
import { sha256Hex } from "./sha256.js";

/** The reason of an unresolved reference: no such HTTPFilter in the route's namespace. */
export const NOT_FOUND = "not_found";
/** The reason of an unresolved reference: the HTTPFilter it names is invalid. */
export const INVALID_FILTER = "invalid_filter";

/** One of the cluster's own HTTPFilters: converted (with a digest of it), or why it is invalid. */
export type LocalHttpFilter =
  | { readonly filter: HttpFilter; readonly digest: string }
  | { readonly reason: string; readonly message: string };

/** The cluster's own HTTPFilters by `namespace/name`. */
export type LocalHttpFilters = ReadonlyMap<string, LocalHttpFilter>;

/**
 * Reads every HTTPFilter among `objects` (a cluster's own objects), with
 * or without targetRefs, as {@link resolveExtensionRefs} needs them: each
 * converted as the projector converts one (mesh reference rules, no
 * targets), or its rejection's reason and message; several different
 * objects with one name are `duplicate_object`. Objects without a usable
 * name are left out (no reference can name them). Never throws.
 */
export function readLocalHttpFilters(objects: readonly KubeObject[]): LocalHttpFilters {
  const index = createObjectIndex(objects);
  const filters = new Map<string, LocalHttpFilter>();
  for (const object of index.list(HTTP_FILTER)) {
    const metadata = object.metadata as { namespace: string; name: string };
    const key = `${metadata.namespace}/${metadata.name}`;
    if (index.isAmbiguous(HTTP_FILTER, metadata.namespace, metadata.name)) {
      const message = `several different HTTPFilter objects are named ${key}`;
      filters.set(key, { reason: "duplicate_object", message });
      continue;
    }
    try {
      const filter = convertHttpFilter(object, index, true);
      filters.set(key, { filter, digest: sha256Hex(toBinary(HttpFilterSchema, filter)) });
    } catch (error) {
      filters.set(key, problemOfError(error));
    }
  }
  return filters;
}

/** Whether an ExtensionRef names a caller-side HTTPFilter. */
export function isHttpFilterRef(ref: ExtensionRef): boolean {
  return ref.group === HTTP_FILTER.group && ref.kind === HTTP_FILTER.kind;
}

/** One HTTPFilter reference of a projection, as resolved. */
export interface ExtensionRefOutcome {
  /** The route, `Kind namespace/name`. */
  readonly route: string;
  /** The HTTPFilter it names, `namespace/name` (the route's namespace). */
  readonly filter: string;
  /** Undefined when resolved; else {@link NOT_FOUND} or {@link INVALID_FILTER}. */
  readonly reason: string | undefined;
  /** The resolved filter's digest, or the unresolved reason's text. */
  readonly detail: string;
}

/** What {@link resolveExtensionRefs} made. */
export interface ExtensionRefResolution {
  /** The projection with its HTTPFilter references resolved (the input itself when nothing changed). */
  readonly projection: ServiceConfigProjection;
  /** Each HTTPFilter reference, in route, rule, filter order (rule filters, then backend filters). */
  readonly outcomes: readonly ExtensionRefOutcome[];
}

/**
 * Every filter of a route, in rule order: each rule's own filters, then
 * its backends' filters, in backend order.
 */
export function routeFilters(route: Route): Filter[] {
  return route.rules.flatMap((rule) => [
    ...rule.filters,
    ...rule.backends.flatMap((backend) => backend.filters),
  ]);
}

function routeLabel(route: Route): string {
  return `${route.kind === RouteKind.GRPC ? "GRPCRoute" : "HTTPRoute"} ${route.namespace}/${route.name}`;
}

/**
 * Resolves every HTTPFilter ExtensionRef of `projection`'s routes (rule and
 * backend filters) against `filters`: a valid filter sets `http_filter`
 * (targets empty), a missing one sets `unresolved_reason` `not_found: …`,
 * an invalid one `invalid_filter: …`. Every other reference, and every
 * reference when `filters` is undefined (the cluster's filters are not known
 * yet), is left with group, kind and name only: whatever an origin put in
 * the consumer-only fields is dropped. Copies what it changes; the input is
 * never modified and is returned as is when nothing changes.
 */
export function resolveExtensionRefs(
  projection: ServiceConfigProjection,
  filters: LocalHttpFilters | undefined,
): ExtensionRefResolution {
  const outcomes: ExtensionRefOutcome[] = [];
  if (!projection.routes.some(hasExtensionRef)) return { projection, outcomes };
  let changed = false;
  const routes = projection.routes.map((route) => {
    let routeChanged = false;
    const resolveList = (list: readonly Filter[]): Filter[] =>
      list.map((f) => {
        if (f.filter.case !== "extensionRef") return f;
        const ref = f.filter.value;
        const next = resolveOne(ref, route, filters, outcomes);
        if (sameRef(ref, next)) return f;
        routeChanged = true;
        return { ...f, filter: { case: "extensionRef", value: next } };
      });
    const rules = route.rules.map((rule) => ({
      ...rule,
      filters: resolveList(rule.filters),
      backends: rule.backends.map((b) => ({ ...b, filters: resolveList(b.filters) })),
    }));
    changed ||= routeChanged;
    return routeChanged ? { ...route, rules } : route;
  });
  return { projection: changed ? { ...projection, routes } : projection, outcomes };
}

/**
 * Whether a route runs any ExtensionRef filter (the common case being none:
 * nothing to copy). Walks the rules without building {@link routeFilters}'
 * list: this runs for every imported projection the agent merges.
 */
function hasExtensionRef(route: Route): boolean {
  for (const rule of route.rules) {
    if (rule.filters.some(isExtensionRef)) return true;
    for (const backend of rule.backends) if (backend.filters.some(isExtensionRef)) return true;
  }
  return false;
}

function isExtensionRef(f: Filter): boolean {
  return f.filter.case === "extensionRef";
}

function resolveOne(
  ref: ExtensionRef,
  route: Route,
  filters: LocalHttpFilters | undefined,
  outcomes: ExtensionRefOutcome[],
): ExtensionRef {
  const bare = { group: ref.group, kind: ref.kind, name: ref.name };
  if (filters === undefined || !isHttpFilterRef(ref)) return create(ExtensionRefSchema, bare);
  const key = `${route.namespace}/${ref.name}`;
  const found = filters.get(key);
  const outcome = { route: routeLabel(route), filter: key };
  if (found !== undefined && "filter" in found) {
    outcomes.push({ ...outcome, reason: undefined, detail: found.digest });
    return create(ExtensionRefSchema, { ...bare, httpFilter: found.filter });
  }
  const unresolvedReason =
    found === undefined
      ? `${NOT_FOUND}: no HTTPFilter ${key} in this cluster`
      : `${INVALID_FILTER}: HTTPFilter ${key} is invalid (${found.reason}: ${found.message})`;
  outcomes.push({
    ...outcome,
    reason: found === undefined ? NOT_FOUND : INVALID_FILTER,
    detail: unresolvedReason,
  });
  return create(ExtensionRefSchema, { ...bare, unresolvedReason });
}

/** Whether resolving left a reference as it was (bare, with the same reason). */
function sameRef(a: ExtensionRef, b: ExtensionRef): boolean {
  return (
    a.unresolvedReason === b.unresolvedReason &&
    a.httpFilter === undefined &&
    b.httpFilter === undefined
  );
}

/**
 * The HTTPFilter references of an already resolved projection (a route
 * table entry's), with their outcome read back from the consumer-only
 * fields; a reference nobody resolved counts as resolved with detail `-`.
 * For counting unresolved references by reason.
 */
export function extensionRefOutcomes(projection: ServiceConfigProjection): ExtensionRefOutcome[] {
  const outcomes: ExtensionRefOutcome[] = [];
  for (const route of projection.routes) {
    if (!hasExtensionRef(route)) continue;
    for (const { filter } of routeFilters(route)) {
      if (filter.case !== "extensionRef" || !isHttpFilterRef(filter.value)) continue;
      const { unresolvedReason, name } = filter.value;
      const reason = unresolvedReason === "" ? undefined : unresolvedReason.split(":")[0];
      outcomes.push({
        route: routeLabel(route),
        filter: `${route.namespace}/${name}`,
        reason,
        detail: unresolvedReason === "" ? "-" : unresolvedReason,
      });
    }
  }
  return outcomes;
}
