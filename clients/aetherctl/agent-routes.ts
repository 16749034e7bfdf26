/**
 * `aetherctl explain --agent`: reading an agent's route table (its `GET
 * /routes` document) instead of a registrar's view, finding the destination
 * service's entry, and describing which source decided it. Parsing and
 * describing are pure; {@link fetchAgentRoutes} does the one HTTP GET.
 */
import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  MeshConfigSchema,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { RouteSource } from "../../services/common/route-merge.js";
import { MESH_RECORD } from "../../services/common/service-name.js";

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

/** Where an explanation's projection came from when `--agent` is given. */
export interface AgentLookup {
  /** The agent's base URL. */
  readonly url: string;
  /** The destination's entry; undefined when the agent does not route the service. */
  readonly entry: AgentRouteEntry | undefined;
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

/** The sentence printed when the agent has no entry for the destination. */
export function notRoutedSentence(agentUrl: string, service: string): string {
  return `the agent at ${agentUrl} does not route ${service} (not in its dependency set, or no config for it): requests go to the service itself`;
}

/**
 * The extra field `-o json` adds to the Decision with `--agent`: the agent,
 * and the entry's source, origin and version (all null when the agent does
 * not route the service).
 */
export interface AgentRouteJson {
  readonly agent: string;
  readonly routed: boolean;
  readonly source: RouteSource | null;
  readonly origin: string | null;
  readonly version: string | null;
}

/** The `agentRoute` field of `-o json` with `--agent`. */
export function agentRouteJson(lookup: AgentLookup): AgentRouteJson {
  const { entry } = lookup;
  return {
    agent: lookup.url,
    routed: entry !== undefined,
    source: entry?.source ?? null,
    origin: entry?.origin ?? null,
    version: entry?.version ?? null,
  };
}

/**
 * GETs `agentUrl/routes` and parses it. Failures are ConnectErrors (so
 * aetherctl reports them as `aetherctl: <code>: <message>` and exits 1):
 * `unavailable` when the agent cannot be reached, does not answer within
 * `timeoutMs`, or has no route table yet; `internal` when the answer is not
 * a route table.
 */
export async function fetchAgentRoutes(
  agentUrl: string,
  options: { readonly timeoutMs: number; readonly signal: AbortSignal },
): Promise<AgentRouteEntry[]> {
  const url = `${agentUrl}/routes`;
  const timeout = AbortSignal.timeout(options.timeoutMs);
  let response: Response;
  let body: string;
  try {
    response = await fetch(url, { signal: AbortSignal.any([options.signal, timeout]) });
    body = await response.text();
  } catch (error) {
    if (timeout.aborted && !options.signal.aborted) {
      throw new ConnectError(
        `the agent at ${agentUrl} did not answer within ${options.timeoutMs} ms; raise --timeout or check the agent`,
        Code.Unavailable,
      );
    }
    const cause = (error as { cause?: { message?: unknown } }).cause;
    const detail = typeof cause?.message === "string" ? cause.message : (error as Error).message;
    throw new ConnectError(
      `cannot reach the agent at ${agentUrl} (${detail}); is it running? (check --agent URL)`,
      Code.Unavailable,
    );
  }
  if (response.status !== 200) {
    throw new ConnectError(
      `the agent at ${agentUrl} answered GET /routes with HTTP ${response.status}: ${body.trim()}`,
      response.status === 503 ? Code.Unavailable : Code.Unknown,
    );
  }
  try {
    return parseAgentRoutes(body);
  } catch (error) {
    throw new ConnectError(
      `${url} is not an agent's route table: ${(error as Error).message}`,
      Code.Internal,
    );
  }
}
