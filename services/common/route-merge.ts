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
 * the route came from (`extension-ref-resolve.ts`).
 *
 * The mesh-wide defaults (MeshConfig, the `@mesh` record) are decided the
 * same way, whole: a local mesh record with a MeshConfig wins, otherwise the
 * import policy's winning `@mesh` record; they are the table's `meshDefaults`, for
 * every service a route rule sets nothing of its own for. An empty
 * dependency set gives no mesh defaults either. Pure.
 */
import { type JsonValue, toJson } from "@bufbuild/protobuf";
import {
  type MeshConfig,
  MeshConfigSchema,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { type LocalHttpFilters, resolveExtensionRefs } from "./extension-ref-resolve.js";
import type { ImportCandidate } from "./import-policy.js";
import { localVersion } from "./projection-content.js";
import { MESH_RECORD } from "./service-name.js";

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

/** The mesh-wide defaults of the route table, and where they came from. */
export interface MeshDefaultsEntry {
  /** Whether the local mesh record or an imported one decided them. */
  readonly source: RouteSource;
  /** The origin cluster of the imported mesh record, or this agent's cluster for a local one. */
  readonly origin: string;
  /** The imported record's version, or for a local one `sha256:` and 16 hex digits of its digest. */
  readonly version: string;
  /** The defaults (the record's `mesh_config`). */
  readonly config: MeshConfig;
  /** The mesh record itself (`originCluster` and `version` as above), signature included. */
  readonly projection: ServiceConfigProjection;
}

/** The merged route table, sorted by service. */
export interface RouteTable {
  /** One entry per service of the dependency set that has config. */
  readonly services: readonly RouteTableEntry[];
  /** The mesh-wide defaults in effect; undefined when no record carries any. */
  readonly meshDefaults?: MeshDefaultsEntry | undefined;
}

/** The inputs of {@link mergeRouteTable}. */
export interface RouteTableInputs {
  /** The dependency set. */
  readonly dependencies: Iterable<string>;
  /** The local projections, by service (the local mesh record under `@mesh`). */
  readonly local: ReadonlyMap<string, ServiceConfigProjection>;
  /** The import policy's winners, by service (the winning mesh record under `@mesh`). */
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
  const dependencies = mergedDependencies(inputs.dependencies);
  for (const service of dependencies) {
    const entry = routeTableEntry(
      service,
      inputs.local.get(service),
      inputs.imported.get(service),
      inputs,
    );
    if (entry !== undefined) services.push(entry);
  }
  if (dependencies.length === 0) return { services };
  const meshDefaults = mergeMeshDefaults(
    inputs.local.get(MESH_RECORD),
    inputs.imported.get(MESH_RECORD),
    inputs.cluster,
  );
  return meshDefaults === undefined ? { services } : { services, meshDefaults };
}

/** The services a table covers: the dependency set without repeats, sorted. */
export function mergedDependencies(dependencies: Iterable<string>): string[] {
  return [...new Set(dependencies)].sort();
}

/**
 * The table entry of one service of the dependency set from its local
 * projection and its imported winner (either may be missing): the local
 * routes when they have any, else the imported projection with its
 * HTTPFilter references resolved against `context.filters`; undefined when
 * neither gives the service config. A new entry object on every call.
 */
export function routeTableEntry(
  service: string,
  local: ServiceConfigProjection | undefined,
  imported: ImportCandidate | undefined,
  context: Pick<RouteTableInputs, "cluster" | "filters">,
): RouteTableEntry | undefined {
  if (local !== undefined && local.routes.length > 0) {
    const version = localVersion(local);
    return {
      service,
      source: "local",
      origin: context.cluster,
      version,
      projection: { ...local, originCluster: context.cluster, version },
      resolution: "",
    };
  }
  if (imported === undefined) return undefined;
  const resolved = resolveExtensionRefs(imported.projection, context.filters);
  return {
    service,
    source: "imported",
    origin: imported.origin,
    version: imported.projection.version,
    projection: resolved.projection,
    resolution: resolved.outcomes.map((o) => `${o.filter}=${o.detail}`).join(","),
  };
}

/**
 * The mesh defaults in effect, from the local mesh record and the imported
 * winning one: the local record's when it carries a MeshConfig, else the
 * imported winner's, whole; undefined when neither carries any.
 */
export function mergeMeshDefaults(
  local: ServiceConfigProjection | undefined,
  imported: ImportCandidate | undefined,
  cluster: string,
): MeshDefaultsEntry | undefined {
  if (local?.meshConfig !== undefined) {
    const version = localVersion(local);
    return {
      source: "local",
      origin: cluster,
      version,
      config: local.meshConfig,
      projection: { ...local, originCluster: cluster, version },
    };
  }
  if (imported?.projection.meshConfig === undefined) return undefined;
  return {
    source: "imported",
    origin: imported.origin,
    version: imported.projection.version,
    config: imported.projection.meshConfig,
    projection: imported.projection,
  };
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

/** The JSON form of the table's mesh defaults (the MeshConfig as proto JSON). */
export interface MeshDefaultsJson {
  /** `local` or `imported`. */
  readonly source: RouteSource;
  /** The origin cluster. */
  readonly origin: string;
  /** The version. */
  readonly version: string;
  /** The MeshConfig in the proto3 JSON mapping. */
  readonly config: JsonValue;
}

/**
 * Serializes a route table as the JSON document the agent writes to `--out`
 * and serves at `/routes`: `{"meshDefaults": {source, origin, version,
 * config}, "services": [{service, source, origin, version, projection}]}`
 * (`meshDefaults` only when the table has mesh defaults), two-space
 * indented, with a final newline. Deterministic: equal tables give equal
 * text, so the text is also the change detector.
 */
export function routeTableToJson(table: RouteTable): string {
  const services: RouteTableEntryJson[] = table.services.map((entry) => ({
    service: entry.service,
    source: entry.source,
    origin: entry.origin,
    version: entry.version,
    projection: toJson(ServiceConfigProjectionSchema, entry.projection),
  }));
  const mesh = table.meshDefaults;
  const meshDefaults: MeshDefaultsJson | undefined =
    mesh === undefined
      ? undefined
      : {
          source: mesh.source,
          origin: mesh.origin,
          version: mesh.version,
          config: toJson(MeshConfigSchema, mesh.config),
        };
  return `${JSON.stringify(meshDefaults === undefined ? { services } : { meshDefaults, services }, null, 2)}\n`;
}
