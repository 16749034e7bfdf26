/**
 * A cluster's local (class-2) routes as projected config: the cluster's own
 * HTTPRoutes and GRPCRoutes, projected with the SAME projector the hub's
 * export controller uses, with `exportAll` (local routes need no
 * ServiceExport). The agent lets them win over imported config; the
 * registrar publishes their digests (fleet drift). The source's HTTPFilters
 * are the cluster's own: every HTTPFilter ExtensionRef of a local route is
 * resolved against them (`extension-ref-resolve.ts`). Pure.
 */
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import {
  type LocalHttpFilters,
  readLocalHttpFilters,
  resolveExtensionRefs,
} from "./extension-ref-resolve.js";
import type { KubeObject } from "./kube-object.js";
import { projectionContent } from "./projection-content.js";
import { DEFAULT_PROJECTION_LIMITS } from "./projection-limits.js";
import { compareRouteProblems, projectServices, type RouteRejection } from "./projector.js";
import { limitProjection } from "./projector-limits.js";
import { sha256Hex } from "./sha256.js";

/** Projected local routes. */
export interface LocalProjection {
  /** One projection per service that has at least one local route, by service. */
  readonly projections: ReadonlyMap<string, ServiceConfigProjection>;
  /** The local routes the projector rejected. */
  readonly rejections: readonly RouteRejection[];
  /** The cluster's own HTTPFilters, for ExtensionRef filters (see `extension-ref-resolve.ts`). */
  readonly filters: LocalHttpFilters;
}

/**
 * Projects local objects: every Service a route attaches to is in scope
 * (`exportAll`); services whose projection has no routes are left out (a
 * ServiceExport alone is not local routing config), but not the mesh
 * record (`@mesh`, the local MeshConfig, when the projector makes one). Each projection is held
 * to the projection limits as the exporter holds its own (routes that do
 * not fit are `too_large` rejections), then has its HTTPFilter ExtensionRefs
 * resolved against the objects' own HTTPFilters.
 */
export function projectLocalRoutes(objects: readonly KubeObject[]): LocalProjection {
  const output = projectServices(objects, { exportAll: true });
  const filters = readLocalHttpFilters(objects);
  const projections = new Map<string, ServiceConfigProjection>();
  const tooLarge: RouteRejection[] = [];
  for (const projection of output.projections) {
    // A mesh record (the local MeshConfig) has no routes: it is local config all the same.
    if (projection.routes.length === 0 && projection.meshConfig === undefined) continue;
    const limited = limitProjection(projection, DEFAULT_PROJECTION_LIMITS);
    for (const rejection of limited.rejections) tooLarge.push(rejection);
    projections.set(
      projection.service,
      resolveExtensionRefs(limited.projection, filters).projection,
    );
  }
  const rejections =
    tooLarge.length === 0
      ? output.rejections
      : [...output.rejections, ...tooLarge].sort(compareRouteProblems);
  return { projections, rejections, filters };
}

/**
 * The digest of each service's local projection: the lowercase hex SHA-256
 * of its content bytes (`projection-content.ts`: version and origin empty),
 * by service; what a registrar publishes as `local_digest`.
 */
export function localDigests(
  projections: ReadonlyMap<string, ServiceConfigProjection>,
): Map<string, string> {
  const digests = new Map<string, string>();
  for (const [service, projection] of projections) {
    digests.set(service, sha256Hex(projectionContent(projection)));
  }
  return digests;
}
