/**
 * The attachment of HTTPFilters to the services the projector projects
 * (GEP-713 direct policy attachment): each valid filter whose targetRefs name
 * a projected Service of its namespace rides in that Service's projection,
 * with the ports it targets, in the order the data plane must run the
 * filters. A filter without targetRefs is only for routes' ExtensionRef
 * filters, which resolve it in the caller's cluster: it is never attached,
 * so never exported. Pure, no I/O.
 */
import { create } from "@bufbuild/protobuf";
import {
  type HttpFilter,
  HttpFilterSchema,
  type ParentRef,
  ParentRefSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { compareTimestamps } from "./evaluator-precedence.js";
import type { KubeObject } from "./kube-object.js";
import type { RouteRef, RouteRejection } from "./projector.js";
import { field, isJsonObject, problemOfError } from "./projector-fields.js";
import {
  convertHttpFilter,
  type FilterTarget,
  readFilterTargets,
} from "./projector-http-filter.js";
import {
  compareStrings,
  getOrCreate,
  HTTP_FILTER,
  type ObjectIndex,
  type ServiceInfo,
} from "./projector-index.js";

/** What {@link attachHttpFilters} needs to know of the projector's scope. */
export interface FilterScope {
  /** Whether `mesh` (GAMMA) reference rules apply: no ReferenceGrant across namespaces. */
  readonly mesh: boolean;
  /** Whether a Service is in scope (exported, or any Service with `exportAll`). */
  readonly inScope: (key: string, service: ServiceInfo) => boolean;
  /** Whether a Service has a projection to attach to. */
  readonly projected: (key: string) => boolean;
}

/** The result of {@link attachHttpFilters}. */
export interface AttachedFilters {
  /** The filters of each projected service, in run order (see {@link compareHttpFilters}). */
  readonly filters: Map<string, HttpFilter[]>;
  /** The filters left out, and why (reported like routes, kind `HTTPFilter`). */
  readonly rejections: RouteRejection[];
}

/**
 * Attaches the HTTPFilters of `index` to the projected services. A filter
 * is considered when one of its targets is an in-scope Service or names a
 * Service that does not exist; it is then rejected, with the in-scope
 * targets as its services, when it cannot be converted (see
 * `convertHttpFilter`), when several different objects share its identity
 * (`duplicate_object`), or when a targetRef names a Service that does not
 * exist or a `sectionName` its Service has no port of (`unknown_target`).
 * An HTTPFilter without a usable identity is always rejected. Never throws.
 */
export function attachHttpFilters(index: ObjectIndex, scope: FilterScope): AttachedFilters {
  const filters = new Map<string, HttpFilter[]>();
  const rejections: RouteRejection[] = [];
  for (const object of index.unidentified(HTTP_FILTER)) {
    const converted = convert(object, index, scope.mesh, []);
    if ("rejection" in converted) rejections.push(converted.rejection);
  }
  for (const object of index.list(HTTP_FILTER)) {
    const ref = filterRefOf(object);
    const targets = readFilterTargets(object).map((target) => ({
      target,
      service: index.service(ref.namespace, target.name),
    }));
    const services = [
      ...new Set(
        targets.flatMap(({ service }) =>
          service !== undefined && scope.inScope(service.key, service) ? [service.key] : [],
        ),
      ),
    ].sort(compareStrings);
    const missing = targets.find(({ service }) => service === undefined);
    if (services.length === 0 && missing === undefined) continue;
    const reject = (reason: string, message: string) =>
      rejections.push({ route: ref, reason, message, services });
    if (index.isAmbiguous(HTTP_FILTER, ref.namespace, ref.name)) {
      reject(
        "duplicate_object",
        `the snapshot holds several different HTTPFilter objects named ${ref.namespace}/${ref.name}`,
      );
      continue;
    }
    const converted = convert(object, index, scope.mesh, services);
    if ("rejection" in converted) {
      rejections.push(converted.rejection);
      continue;
    }
    const unmatched = targets.find(({ target, service }) => portOf(target, service) === null);
    if (unmatched !== undefined) {
      const { target } = unmatched;
      const what =
        unmatched.service === undefined
          ? `Service ${ref.namespace}/${target.name}, which does not exist`
          : `sectionName ${JSON.stringify(target.sectionName)} of Service ${ref.namespace}/${target.name}, which has no such port`;
      reject("unknown_target", `spec.targetRefs[${target.index}] names ${what}`);
      continue;
    }
    for (const key of services) {
      if (!scope.projected(key)) continue;
      const refs: ParentRef[] = [];
      for (const { target, service } of targets) {
        if (service?.key !== key) continue;
        const parentRef = create(ParentRefSchema, {
          service: key,
          port: portOf(target, service) ?? 0,
          sectionName: target.sectionName ?? "",
        });
        if (
          !refs.some((r) => r.port === parentRef.port && r.sectionName === parentRef.sectionName)
        ) {
          refs.push(parentRef);
        }
      }
      const attached = create(HttpFilterSchema, { ...converted.filter, targets: refs });
      getOrCreate(filters, key, () => []).push(attached);
    }
  }
  for (const list of filters.values()) list.sort(compareHttpFilters);
  return { filters, rejections };
}

/**
 * The port a target names: its number for a `sectionName` its Service has,
 * undefined for a whole-Service target, null when it matches nothing (the
 * Service is missing, or has no port of that name).
 */
function portOf(target: FilterTarget, service: ServiceInfo | undefined): number | undefined | null {
  if (service === undefined) return null;
  if (target.sectionName === undefined) return undefined;
  return service.ports.find((p) => p.name === target.sectionName)?.port ?? null;
}

function convert(
  object: KubeObject,
  index: ObjectIndex,
  mesh: boolean,
  services: readonly string[],
): { filter: HttpFilter } | { rejection: RouteRejection } {
  try {
    return { filter: convertHttpFilter(object, index, mesh) };
  } catch (error) {
    return { rejection: { route: filterRefOf(object), ...problemOfError(error), services } };
  }
}

function filterRefOf(object: KubeObject): RouteRef {
  const metadata: unknown = isJsonObject(object) ? object.metadata : undefined;
  const read = (key: string): string => {
    const value = isJsonObject(metadata) ? field(metadata, key) : undefined;
    return typeof value === "string" ? value : "";
  };
  return { kind: "HTTPFilter", namespace: read("namespace"), name: read("name") };
}

/**
 * The order the data plane runs a service's filters in: by phase (AUTHN,
 * AUTHZ, STATS, DEFAULT), then higher priority first, then older creation
 * time first (a filter without one after those with one), then namespace
 * and name (GEP-713's conflict rule).
 */
function compareHttpFilters(a: HttpFilter, b: HttpFilter): number {
  return (
    a.phase - b.phase ||
    b.priority - a.priority ||
    compareTimestamps(a.creationTime, b.creationTime) ||
    compareStrings(a.namespace, b.namespace) ||
    compareStrings(a.name, b.name)
  );
}
