/**
 * What a stored record may carry, by its key: the mesh record (`@mesh`)
 * carries an origin's MeshConfig and nothing else; a service's projection
 * never carries one. A value of the wrong shape is corrupt: readers skip and
 * count it, writers refuse it. No stored record carries what only a consumer
 * sets: an ExtensionRef's `http_filter` or `unresolved_reason` (a caller-side
 * HTTPFilter resolved in the consumer's own cluster never travels). Pure,
 * no I/O.
 */
import type {
  Filter,
  ServiceConfigProjection,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { routeFilters } from "./extension-ref-resolve.js";
import { isMeshRecord } from "./service-name.js";

/** The fields of a projection the shape check reads. */
export type RecordContent = Pick<
  ServiceConfigProjection,
  "routes" | "httpFilters" | "backendTls" | "virtualHosts" | "meshConfig"
>;

/**
 * Checks that a projection stored under `service` has the shape of its key:
 * under `@mesh`, a `mesh_config` and no routes, HTTP filters, backend TLS or
 * virtual hosts; under a service key, no `mesh_config`. Returns undefined
 * when it does, otherwise a sentence saying what is wrong.
 */
export function checkRecordShape(service: string, projection: RecordContent): string | undefined {
  if (!isMeshRecord(service)) {
    if (projection.meshConfig !== undefined) {
      return `projection of ${service} carries a mesh_config, which only the mesh record (@mesh) may carry`;
    }
    return consumerOnlyProblem(service, projection);
  }
  if (projection.meshConfig === undefined) return "the mesh record (@mesh) carries no mesh_config";
  const extra = serviceFields(projection);
  return extra.length === 0
    ? undefined
    : `the mesh record (@mesh) carries ${extra.join(", ")}, which only a service's projection may carry`;
}

/**
 * Names the first route whose rule or backend carries an ExtensionRef with
 * a consumer-only field set, or undefined when none does.
 */
function consumerOnlyProblem(service: string, projection: RecordContent): string | undefined {
  const route = projection.routes.find((r) => routeFilters(r).some(isConsumerResolved));
  return route === undefined
    ? undefined
    : `projection of ${service}: route ${route.namespace}/${route.name} carries an ExtensionRef resolved by a consumer (http_filter or unresolved_reason), which never travels`;
}

/** Reports whether a filter is an ExtensionRef with a consumer-only field set. */
function isConsumerResolved(filter: Filter): boolean {
  return (
    filter.filter.case === "extensionRef" &&
    (filter.filter.value.httpFilter !== undefined || filter.filter.value.unresolvedReason !== "")
  );
}

/** The service-only fields a projection sets, by their proto names. */
function serviceFields(projection: RecordContent): string[] {
  const fields: string[] = [];
  if (projection.routes.length > 0) fields.push("routes");
  if (projection.httpFilters.length > 0) fields.push("http_filters");
  if (projection.backendTls.length > 0) fields.push("backend_tls");
  if (projection.virtualHosts.length > 0) fields.push("virtual_hosts");
  return fields;
}
