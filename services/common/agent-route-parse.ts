/**
 * An agent's route table as its `GET /routes` document says it (the agent
 * writes it with `route-merge.ts`'s `routeTableToJson`), read back: each
 * service's entry with its source, origin, version and decoded projection,
 * the mesh defaults as the entry of `@mesh`. Pure, shared by `aetherctl
 * explain --agent`, `aetherctl dashboard`'s agent proxy and the console's
 * Explain view (`agent-route-write.ts` writes the document again).
 */
import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import {
  MeshConfigSchema,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { RouteSource } from "./route-merge.js";
import { MESH_RECORD } from "./service-name.js";

/** One entry of an agent's route table, with the projection decoded. */
export interface AgentRouteEntry {
  /** The service, `namespace/name`. */
  readonly service: string;
  /** `local` (the agent's cluster's own routes) or `imported` (the import policy's winner). */
  readonly source: RouteSource;
  /** The origin cluster: the imported projection's, or the agent's own for local routes. */
  readonly origin: string;
  /** The version that decided it (an export time, or `sha256:…` for local routes). */
  readonly version: string;
  /** The projection the agent's data plane applies. */
  readonly projection: ServiceConfigProjection;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Checks the source, origin and version of an entry (or of `meshDefaults`), at `where`. */
function parseHeld(
  value: Record<string, unknown>,
  fields: readonly string[],
  where: string,
): { source: RouteSource; origin: string; version: string } {
  for (const field of fields) {
    if (typeof value[field] !== "string") throw new Error(`${where}.${field} is not a string`);
  }
  const source = value.source;
  if (source !== "local" && source !== "imported") {
    throw new Error(`${where}.source is ${JSON.stringify(source)}, not "local" or "imported"`);
  }
  return {
    source: source as RouteSource,
    origin: value.origin as string,
    version: value.version as string,
  };
}

function parseEntry(value: unknown, index: number): AgentRouteEntry {
  const where = `services[${index}]`;
  if (!isObject(value)) throw new Error(`${where} is not an object`);
  const held = parseHeld(value, ["service", "origin", "version"], where);
  if (!isObject(value.projection)) throw new Error(`${where}.projection is not an object`);
  let projection: ServiceConfigProjection;
  try {
    projection = fromJson(ServiceConfigProjectionSchema, value.projection as JsonValue);
  } catch (error) {
    throw new Error(`${where}.projection: ${(error as Error).message}`);
  }
  return { service: value.service as string, ...held, projection };
}

/**
 * The table's `meshDefaults` as an entry for `@mesh` whose projection is the
 * mesh record (`originCluster`, `version` and `meshConfig` from it).
 */
function parseMeshDefaults(value: unknown): AgentRouteEntry {
  const where = "meshDefaults";
  if (!isObject(value)) throw new Error(`${where} is not an object`);
  const held = parseHeld(value, ["origin", "version"], where);
  if (!isObject(value.config)) throw new Error(`${where}.config is not an object`);
  let meshConfig: ServiceConfigProjection["meshConfig"];
  try {
    meshConfig = fromJson(MeshConfigSchema, value.config as JsonValue);
  } catch (error) {
    throw new Error(`${where}.config: ${(error as Error).message}`);
  }
  const projection = create(ServiceConfigProjectionSchema, {
    service: MESH_RECORD,
    originCluster: held.origin,
    version: held.version,
    meshConfig,
  });
  return { service: MESH_RECORD, ...held, projection };
}

/**
 * Parses the agent's `/routes` document, `{"meshDefaults": {source, origin,
 * version, config}, "services": [{service, source, origin, version,
 * projection}]}` with the projection (and the MeshConfig) in proto JSON.
 * The mesh defaults, when there are some, come first as the entry of
 * `@mesh` (its projection the mesh record). Throws an Error saying what is
 * wrong when the text is not such a document.
 */
export function parseAgentRoutes(text: string): AgentRouteEntry[] {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new Error(`not JSON: ${(error as Error).message}`);
  }
  if (!isObject(document) || !Array.isArray(document.services)) {
    throw new Error('not a route table: no "services" array');
  }
  const services = document.services.map(parseEntry);
  return document.meshDefaults === undefined
    ? services
    : [parseMeshDefaults(document.meshDefaults), ...services];
}

/** The entry of `service` in a route table; undefined when there is none. */
export function findAgentRoute(
  entries: readonly AgentRouteEntry[],
  service: string,
): AgentRouteEntry | undefined {
  return entries.find((entry) => entry.service === service);
}

/** Which source decided a service: `local, from cluster X` or `imported, from origin Y version V`. */
export function describeRouteSource(entry: AgentRouteEntry): string {
  return entry.source === "local"
    ? `local, from cluster ${entry.origin} (version ${entry.version})`
    : `imported, from origin ${entry.origin} version ${entry.version}`;
}
