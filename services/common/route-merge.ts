/**
 * The route table: what the agent hands its data plane. It covers the
 * dependency set only, one entry per service that has config, and records
 * which source decided each service:
 *
 * - `local`: the cluster's own class-2 routes for the service (from the
 *   local source, projected with the shared projector) win, for the whole
 *   service. A local projection without routes (a ServiceExport alone) is
 *   not local config and does not win.
 * - `imported`: otherwise the import policy's winner among the trusted
 *   origins' projections fills the service.
 *
 * A service in the dependency set with neither has no entry (its callers get
 * the data plane's default routing). Local routes for services outside the
 * dependency set are left out: the table is what this node calls.
 *
 * An imported projection's HTTPFilter ExtensionRefs are resolved against
 * the cluster's own HTTPFilters (`inputs.filters`), as local routes' are
 * when they are projected: a caller-side filter is the consumer's, wherever
 * the route came from (`extension-ref-resolve.ts`). Pure.
 */
import { type JsonValue, toJson } from "@bufbuild/protobuf";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { type LocalHttpFilters, resolveExtensionRefs } from "./extension-ref-resolve.js";
import type { ImportCandidate } from "./import-policy.js";
import { localVersion } from "./projection-content.js";

/** Which source decided a service. */
export type RouteSource = "local" | "imported";

/** One service of the route table. */
export interface RouteTableEntry {
  /** The service, `namespace/name`. */
  readonly service: string;
  /** Whether the local routes or an imported projection decided the service. */
  readonly source: RouteSource;
  /** The origin cluster of the imported projection, or this agent's cluster for local routes. */
  readonly origin: string;
  /**
   * The imported projection's version (its export time), or for local routes
   * `sha256:` and the first 16 hex digits of the projection's digest.
   */
  readonly version: string;
  /** The projection the data plane applies (`originCluster` and `version` as above). */
  readonly projection: ServiceConfigProjection;
  /**
   * For an imported projection whose HTTPFilter ExtensionRefs were resolved
   * here: what they resolved to (each filter's digest or unresolved reason),
   * which its version does not say; empty otherwise.
   */
  readonly resolution: string;
}

/** The merged route table, sorted by service. */
export interface RouteTable {
  /** One entry per service of the dependency set that has config. */
  readonly services: readonly RouteTableEntry[];
}

/** The inputs of {@link mergeRouteTable}. */
export interface RouteTableInputs {
  /** The dependency set. */
  readonly dependencies: Iterable<string>;
  /** The local projections, by service. */
  readonly local: ReadonlyMap<string, ServiceConfigProjection>;
  /** The import policy's winners, by service. */
  readonly imported: ReadonlyMap<string, ImportCandidate>;
  /** This agent's cluster, recorded as the origin of local routes. */
  readonly cluster: string;
  /**
   * The cluster's own HTTPFilters, for imported routes' ExtensionRef filters;
   * undefined while not known (their references are left bare).
   */
  readonly filters?: LocalHttpFilters | undefined;
}

/** Merges local and imported config into the route table (see the module comment). */
export function mergeRouteTable(inputs: RouteTableInputs): RouteTable {
  const services: RouteTableEntry[] = [];
  for (const service of [...new Set(inputs.dependencies)].sort()) {
    const local = inputs.local.get(service);
    if (local !== undefined && local.routes.length > 0) {
      const version = localVersion(local);
      services.push({
        service,
        source: "local",
        origin: inputs.cluster,
        version,
        projection: { ...local, originCluster: inputs.cluster, version },
        resolution: "",
      });
      continue;
    }
    const imported = inputs.imported.get(service);
    if (imported !== undefined) {
      const resolved = resolveExtensionRefs(imported.projection, inputs.filters);
      services.push({
        service,
        source: "imported",
        origin: imported.origin,
        version: imported.projection.version,
        projection: resolved.projection,
        resolution: resolved.outcomes.map((o) => `${o.filter}=${o.detail}`).join(","),
      });
    }
  }
  return { services };
}

/** The JSON form of a route table entry (the projection as proto JSON). */
export interface RouteTableEntryJson {
  /** The service. */
  readonly service: string;
  /** `local` or `imported`. */
  readonly source: RouteSource;
  /** The origin cluster. */
  readonly origin: string;
  /** The version. */
  readonly version: string;
  /** The projection in the proto3 JSON mapping. */
  readonly projection: JsonValue;
}

/**
 * Serializes a route table as the JSON document the agent writes to `--out`
 * and serves at `/routes`: `{"services": [{service, source, origin, version,
 * projection}]}`, two-space indented, with a final newline. Deterministic:
 * equal tables give equal text, so the text is also the change detector.
 */
export function routeTableToJson(table: RouteTable): string {
  const services: RouteTableEntryJson[] = table.services.map((entry) => ({
    service: entry.service,
    source: entry.source,
    origin: entry.origin,
    version: entry.version,
    projection: toJson(ServiceConfigProjectionSchema, entry.projection),
  }));
  return `${JSON.stringify({ services }, null, 2)}\n`;
}
