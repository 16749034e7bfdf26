/**
 * The incremental projector: {@link projectServices} for a snapshot that
 * changes a little at a time. The export controller re-projects its source
 * after every change; at thousands of services a full projection takes most of
 * a second, while an edit of one route touches one or two services.
 *
 * It compares each snapshot with the previous one by object reference (the
 * sources keep the objects of unchanged files and resources), works out which
 * services an added or removed object can affect, and projects only those,
 * over just the objects their projections depend on. The result is what
 * `projectServices` gives for the whole snapshot (a test checks this over
 * random edit sequences). Anything it does not track precisely (a
 * ReferenceGrant, a route, HTTPFilter or BackendTLSPolicy without a usable
 * identity, a large change) falls back to a full projection. An HTTPFilter is
 * tracked like a route (its targetRefs as parents, its extension backends as
 * backends). A BackendTLSPolicy affects
 * the Services it targets, a ConfigMap the targets of the policies naming it;
 * the Services that share policies are re-projected together, since which
 * policy wins one of them decides whether a policy is rejected. VirtualHosts
 * are not tracked precisely (see `projector-incremental-virtual-hosts.ts`).
 * MeshConfigs (a handful at most) are always projected again with whatever
 * else is, and an added or removed one affects the mesh record `@mesh`.
 *
 * Pure and deterministic: no I/O, no clock. Objects passed in must not be
 * modified afterwards: a changed object must be a new object.
 */
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import { apiGroupOf, GATEWAY_API_GROUP, type KubeObject, MCS_API_GROUP } from "./kube-object.js";
import {
  compareRouteProblems,
  type ProjectorOptions,
  projectServices,
  type RouteRejection,
  type RouteWarning,
} from "./projector.js";
import { field, isJsonObject, type JsonObject } from "./projector-fields.js";
import { createVirtualHostTracker } from "./projector-incremental-virtual-hosts.js";
import {
  HTTP_FILTER as HTTP_FILTER_TYPE,
  MESH_CONFIG as MESH_CONFIG_TYPE,
} from "./projector-index.js";
import { MESH_RECORD } from "./service-name.js";

/** What {@link IncrementalProjector.update} found. */
export interface ProjectionUpdate {
  /**
   * True when this update projected the whole snapshot: `projections` then
   * holds every in-scope service, and services absent from it are out of
   * scope (`removed` is empty).
   */
  readonly full: boolean;
  /**
   * The projections of the services re-projected by this update (every
   * in-scope service when `full`), sorted by service, exactly as
   * `projectServices` projects them for the whole snapshot. A service whose
   * projection changed is always among them; one that did not may be too.
   */
  readonly projections: readonly ServiceConfigProjection[];
  /** The services that were in scope after the previous update and no longer are, sorted. */
  readonly removed: readonly string[];
  /** Every rejection for the whole snapshot, as `projectServices` reports them. */
  readonly rejections: RouteRejection[];
  /** Every warning for the whole snapshot, as `projectServices` reports them. */
  readonly warnings: RouteWarning[];
}

/** Options of {@link IncrementalProjector.update}. */
export interface ProjectionUpdateOptions {
  /** Project the whole snapshot again; default false. */
  readonly full?: boolean;
  /**
   * Services (`namespace/name`) to re-project even when nothing they depend
   * on changed (the export controller repairing a key someone else wrote);
   * default none.
   */
  readonly services?: ReadonlySet<string>;
}

/** See {@link createIncrementalProjector}. */
export interface IncrementalProjector {
  /**
   * Projects `objects`, re-projecting only what changed since the previous
   * call (everything on the first call, or when `options.full` is set), and
   * also the services in `options.services` (as if an edit had affected
   * them: those in scope are among the projections even when nothing about
   * them changed; those out of scope are not).
   */
  update(objects: readonly KubeObject[], options?: ProjectionUpdateOptions): ProjectionUpdate;
  /**
   * Indexes what the last snapshot's projections depend on, which the next
   * incremental update needs. A full update leaves this for later, so that a
   * cold start writes its projections sooner; call it when idle. Idempotent.
   */
  prepare(): void;
  /** The services in scope (with a projection) after the last update. */
  readonly services: ReadonlySet<string>;
}

const NONE: ReadonlySet<string> = new Set();

/** Above this share of changed objects, a full projection is cheaper than tracking. */
const FULL_PROJECTION_SHARE = 0.25;

const HTTP_ROUTE = `${GATEWAY_API_GROUP}/HTTPRoute`;
const GRPC_ROUTE = `${GATEWAY_API_GROUP}/GRPCRoute`;
const REFERENCE_GRANT = `${GATEWAY_API_GROUP}/ReferenceGrant`;
/** HTTPFilters are tracked like routes: their targetRefs as parents, extension backends as backends. */
const HTTP_FILTER = `${HTTP_FILTER_TYPE.group}/${HTTP_FILTER_TYPE.kind}`;
const SERVICE = "/Service";
const SERVICE_EXPORT = `${MCS_API_GROUP}/ServiceExport`;
const BACKEND_TLS_POLICY = `${GATEWAY_API_GROUP}/BackendTLSPolicy`;
const CONFIG_MAP = "/ConfigMap";
const MESH_CONFIG = `${MESH_CONFIG_TYPE.group}/${MESH_CONFIG_TYPE.kind}`;

/** What the projector keeps about one route or HTTPFilter object (kept small: there is one per route). */
interface RouteInfo {
  /** Every Service its parentRefs name (`namespace/name`), in or out of scope. */
  readonly parents: readonly string[];
  /** Every Service its backendRefs name, mirrors included. */
  readonly backends: readonly string[];
}

/** What the projector keeps about one BackendTLSPolicy object. */
interface PolicyInfo {
  /** The Services (`namespace/name`) its targetRefs name, existing or not. */
  readonly targets: readonly string[];
  /** The ConfigMaps (`namespace/name`) its caCertificateRefs name. */
  readonly configMaps: readonly string[];
}

/** An object's type and identity, as the projector's object index keys it. */
interface Classified {
  /** `group/kind`. */
  readonly type: string;
  /** `type`, namespace and name; undefined when the object has no usable identity. */
  readonly identity: string | undefined;
  /** `namespace/name`; undefined when the object has no usable identity. */
  readonly key: string | undefined;
}

/**
 * Creates an incremental projector with the options of `projectServices`.
 * Its first update projects the whole snapshot.
 *
 * Why it is long: the dependency index (objects by identity, routes by parent
 * and by backend, grants) and the two update paths that read and change it
 * are one piece of state that must change together; split apart, the maps
 * would be passed around, not hidden.
 */
export function createIncrementalProjector(options: ProjectorOptions = {}): IncrementalProjector {
  let previous: readonly KubeObject[] | undefined;
  /** The last snapshot, until its dependencies are indexed (see `prepare`). */
  let unindexed: readonly KubeObject[] | undefined;
  /** The objects the projection depends on (routes, Services, ServiceExports), by identity. */
  let byIdentity = new Map<string, KubeObject[]>();
  let routes = new Map<KubeObject, RouteInfo>();
  /** The route objects naming each Service as a parent (arrays: mostly one or two each). */
  let routesByParent = new Map<string, KubeObject[]>();
  /** The route objects naming each Service as a backend. */
  let routesByBackend = new Map<string, KubeObject[]>();
  let policies = new Map<KubeObject, PolicyInfo>();
  /** The BackendTLSPolicy objects targeting each Service. */
  let policiesByTarget = new Map<string, KubeObject[]>();
  /** The BackendTLSPolicy objects naming each ConfigMap. */
  let policiesByConfigMap = new Map<string, KubeObject[]>();
  let grants: KubeObject[] = [];
  /** The MeshConfig objects, identified or not (projected with every update). */
  let meshConfigs: KubeObject[] = [];
  const virtualHosts = createVirtualHostTracker();
  let inScope = new Set<string>();
  /** The problems of each route (by RouteRef), rejections and warnings. */
  let problems = new Map<string, { rejections: RouteRejection[]; warnings: RouteWarning[] }>();

  const index = (object: KubeObject): void => {
    const { type, identity, key } = classify(object);
    if (type === REFERENCE_GRANT) grants.push(object);
    if (type === MESH_CONFIG) meshConfigs.push(object);
    if (virtualHosts.index(object)) return;
    if (identity === undefined || key === undefined || !isTracked(type)) return;
    push(byIdentity, identity, object);
    if (type === BACKEND_TLS_POLICY) {
      const info = describePolicy(object);
      policies.set(object, info);
      for (const target of info.targets) add(policiesByTarget, target, object);
      for (const configMap of info.configMaps) add(policiesByConfigMap, configMap, object);
      return;
    }
    if (!isRouteLike(type)) return;
    const info = describeRoute(object);
    routes.set(object, info);
    for (const parent of info.parents) add(routesByParent, parent, object);
    for (const backend of info.backends) add(routesByBackend, backend, object);
  };

  const unindex = (object: KubeObject): void => {
    const { type, identity } = classify(object);
    if (type === MESH_CONFIG) meshConfigs = meshConfigs.filter((o) => o !== object);
    if (identity === undefined) return;
    const list = byIdentity.get(identity);
    if (list !== undefined) {
      const at = list.indexOf(object);
      if (at >= 0) list.splice(at, 1);
      if (list.length === 0) byIdentity.delete(identity);
    }
    const policy = policies.get(object);
    if (policy !== undefined) {
      policies.delete(object);
      for (const target of policy.targets) remove(policiesByTarget, target, object);
      for (const configMap of policy.configMaps) remove(policiesByConfigMap, configMap, object);
    }
    const info = routes.get(object);
    if (info === undefined) return;
    routes.delete(object);
    for (const parent of info.parents) remove(routesByParent, parent, object);
    for (const backend of info.backends) remove(routesByBackend, backend, object);
  };

  const prepare = (): void => {
    if (unindexed === undefined) return;
    byIdentity = new Map();
    routes = new Map();
    routesByParent = new Map();
    routesByBackend = new Map();
    policies = new Map();
    policiesByTarget = new Map();
    policiesByConfigMap = new Map();
    grants = [];
    meshConfigs = [];
    virtualHosts.reset();
    for (const object of unindexed) index(object);
    unindexed = undefined;
  };

  const full = (objects: readonly KubeObject[]): ProjectionUpdate => {
    unindexed = objects;
    const output = projectServices(objects, options);
    inScope = new Set(output.projections.map((p) => p.service));
    problems = new Map();
    for (const rejection of output.rejections)
      problemsOf(problems, rejection).rejections.push(rejection);
    for (const warning of output.warnings) problemsOf(problems, warning).warnings.push(warning);
    return { full: true, projections: output.projections, removed: [], ...allProblems(problems) };
  };

  const incremental = (
    added: readonly KubeObject[],
    removed: readonly KubeObject[],
    also: ReadonlySet<string>,
  ): ProjectionUpdate | undefined => {
    const affected = new Set<string>(also);
    const touchedIdentities = new Set<string>();
    const touchedProblems = new Set<string>();
    const changedServices: string[] = [];
    const changedConfigMaps: string[] = [];
    const touchedPolicies = new Set<string>();
    for (const object of [...removed, ...added]) {
      const { type, identity, key } = classify(object);
      if (type === REFERENCE_GRANT || virtualHosts.isVirtualHost(object)) return undefined;
      if (type === MESH_CONFIG) {
        affected.add(MESH_RECORD);
        touchedProblems.add(problemKeyOfMeshConfig(object));
      }
      if ((type === SERVICE || type === SERVICE_EXPORT) && virtualHosts.targets(key ?? "")) {
        return undefined; // a VirtualHost's claims may change
      }
      if (type === BACKEND_TLS_POLICY) {
        if (identity === undefined) return undefined; // its rejection is not tracked
        touchedPolicies.add(identity);
        touchedProblems.add(problemKeyOfPolicy(object));
        for (const target of (policies.get(object) ?? describePolicy(object)).targets) {
          affected.add(target);
        }
      } else if (type === CONFIG_MAP && key !== undefined) changedConfigMaps.push(key);
      if (isRouteLike(type)) {
        if (identity === undefined) return undefined; // its rejection is not tracked
        touchedIdentities.add(identity);
        const info = routes.get(object) ?? describeRoute(object);
        touchedProblems.add(problemKeyOfRoute(object));
        for (const parent of info.parents) affected.add(parent);
      } else if ((type === SERVICE || type === SERVICE_EXPORT) && key !== undefined) {
        affected.add(key);
        if (type === SERVICE) changedServices.push(key);
      }
    }
    for (const object of removed) unindex(object);
    for (const object of added) index(object);
    // Every route using a changed Service as a backend changes in each of its parents, and
    // an HTTPFilter targeting it in each of its targets (a missing target rejects it).
    for (const service of changedServices) {
      const filters = (routesByParent.get(service) ?? []).filter((o) => o.kind === "HTTPFilter");
      for (const route of [...(routesByBackend.get(service) ?? []), ...filters]) {
        for (const parent of (routes.get(route) as RouteInfo).parents) affected.add(parent);
      }
    }
    for (const configMap of changedConfigMaps) {
      for (const policy of policiesByConfigMap.get(configMap) ?? []) {
        for (const target of (policies.get(policy) as PolicyInfo).targets) affected.add(target);
      }
    }
    for (const identity of touchedPolicies) {
      for (const object of byIdentity.get(identity) ?? []) {
        for (const target of (policies.get(object) as PolicyInfo).targets) affected.add(target);
      }
    }
    // A route (or HTTPFilter) identity shared by several objects is ambiguous: all of them matter.
    for (const identity of touchedIdentities) {
      for (const object of byIdentity.get(identity) ?? []) {
        for (const parent of (routes.get(object) as RouteInfo).parents) affected.add(parent);
      }
    }
    // Services sharing a policy are decided together (closed over the shared policies), once
    // every other reason a Service is affected is known.
    const policyObjects = closeOverPolicies(affected);

    const subset = new Set<KubeObject>([...grants, ...meshConfigs]);
    const addIdentity = (identity: string): void => {
      for (const object of byIdentity.get(identity) ?? []) subset.add(object);
    };
    const addService = (key: string): void => {
      addIdentity(`${SERVICE}\u0000${key}`);
      addIdentity(`${SERVICE_EXPORT}\u0000${key}`);
    };
    for (const service of affected) {
      addService(service);
      for (const route of routesByParent.get(service) ?? []) {
        for (const object of byIdentity.get(classify(route).identity as string) ?? []) {
          const sibling = routes.get(object) as RouteInfo;
          subset.add(object);
          touchedProblems.add(problemKeyOfRoute(object));
          for (const parent of sibling.parents) addService(parent);
          for (const backend of sibling.backends) addIdentity(`${SERVICE}\u0000${backend}`);
        }
      }
    }

    for (const object of policyObjects) {
      subset.add(object);
      touchedProblems.add(problemKeyOfPolicy(object));
      for (const configMap of (policies.get(object) as PolicyInfo).configMaps) {
        addIdentity(`${CONFIG_MAP}\u0000${configMap}`);
      }
    }

    for (const object of virtualHosts.objects) subset.add(object);
    for (const service of virtualHosts.services) addIdentity(`${SERVICE}\u0000${service}`);

    const output = projectServices([...subset], options);
    const projections = output.projections.filter((p) => affected.has(p.service));
    const projected = new Set(projections.map((p) => p.service));
    for (const service of virtualHosts.services) {
      // A VirtualHost is reported only while its Service is in scope.
      if (affected.has(service) && inScope.has(service) !== projected.has(service))
        return undefined;
    }
    const gone = [...affected].filter((s) => inScope.has(s) && !projected.has(s)).sort();
    for (const service of gone) inScope.delete(service);
    for (const service of projected) inScope.add(service);

    for (const key of touchedProblems) problems.delete(key);
    for (const rejection of output.rejections) {
      if (touchedProblems.has(problemKeyOf(rejection))) {
        problemsOf(problems, rejection).rejections.push(rejection);
      }
    }
    for (const warning of output.warnings) {
      if (touchedProblems.has(problemKeyOf(warning))) {
        problemsOf(problems, warning).warnings.push(warning);
      }
    }
    return { full: false, projections, removed: gone, ...allProblems(problems) };
  };

  /**
   * Adds to `affected` every Service a policy targeting one of them also
   * targets, until none is added; returns those policies (every object of
   * their identities).
   */
  const closeOverPolicies = (affected: Set<string>): Set<KubeObject> => {
    const found = new Set<KubeObject>();
    const queue = [...affected];
    for (let service = queue.pop(); service !== undefined; service = queue.pop()) {
      for (const policy of policiesByTarget.get(service) ?? []) {
        for (const object of byIdentity.get(classify(policy).identity as string) ?? []) {
          if (found.has(object)) continue;
          found.add(object);
          for (const target of (policies.get(object) as PolicyInfo).targets) {
            if (affected.has(target)) continue;
            affected.add(target);
            queue.push(target);
          }
        }
      }
    }
    return found;
  };

  return {
    get services() {
      return inScope;
    },
    prepare,
    update(objects, updateOptions = {}) {
      const before = previous;
      previous = [...objects];
      if (updateOptions.full === true || before === undefined) return full(objects);
      const diff = difference(before, objects);
      if (diff === undefined) return full(objects);
      const { added, removed } = diff;
      if (added.length + removed.length > objects.length * FULL_PROJECTION_SHARE) {
        return full(objects);
      }
      prepare();
      return incremental(added, removed, updateOptions.services ?? NONE) ?? full(objects);
    },
  };
}

/**
 * The objects of `after` that are not in `before` and the other way round,
 * by reference; undefined when `after` holds an object twice (which the
 * tracking does not handle). Snapshots of the same length are compared
 * position by position (sources keep their order, so an edit replaces
 * objects in place); an object that only moved shows up as both removed and
 * added, which costs a re-projection and nothing else.
 */
function difference(
  before: readonly KubeObject[],
  after: readonly KubeObject[],
): { added: KubeObject[]; removed: KubeObject[] } | undefined {
  if (before.length === after.length) {
    const added: KubeObject[] = [];
    const removed: KubeObject[] = [];
    for (let i = 0; i < after.length; i++) {
      if (before[i] === after[i]) continue;
      added.push(after[i] as KubeObject);
      removed.push(before[i] as KubeObject);
    }
    if (added.length === 0) return { added, removed };
    const changed = new Set(added);
    if (changed.size !== added.length) return undefined;
    // An added object may be a duplicate of an unchanged one.
    for (let i = 0; i < after.length; i++) {
      if (before[i] === after[i] && changed.has(after[i] as KubeObject)) return undefined;
    }
    return { added, removed };
  }
  const next = new Set(after);
  if (next.size !== after.length) return undefined;
  const previous = new Set(before);
  return {
    added: after.filter((object) => !previous.has(object)),
    removed: before.filter((object) => !next.has(object)),
  };
}

/** Whether the projection of a service depends on objects of this type by identity. */
function isTracked(type: string): boolean {
  return (
    isRouteLike(type) ||
    type === SERVICE ||
    type === SERVICE_EXPORT ||
    type === BACKEND_TLS_POLICY ||
    type === CONFIG_MAP
  );
}

/** Routes and HTTPFilters: objects that attach to Services and may name backends. */
function isRouteLike(type: string): boolean {
  return type === HTTP_ROUTE || type === GRPC_ROUTE || type === HTTP_FILTER;
}

/**
 * Reads what a BackendTLSPolicy depends on, leniently: the Services its
 * targetRefs of kind `Service` name and the ConfigMaps its caCertificateRefs
 * name, all in its own namespace.
 */
function describePolicy(object: KubeObject): PolicyInfo {
  const namespace = (object.metadata as JsonObject).namespace as string;
  const names = (list: unknown, kind: string | undefined): string[] => {
    const found = new Set<string>();
    for (const ref of Array.isArray(list) ? list : []) {
      if (!isJsonObject(ref) || (kind !== undefined && field(ref, "kind") !== kind)) continue;
      const name = field(ref, "name");
      if (typeof name === "string") found.add(`${namespace}/${name}`);
    }
    return [...found];
  };
  const spec = isJsonObject(object.spec) ? object.spec : {};
  const validation = field(spec, "validation");
  return {
    targets: names(field(spec, "targetRefs"), "Service"),
    configMaps: names(
      isJsonObject(validation) ? field(validation, "caCertificateRefs") : undefined,
      undefined,
    ),
  };
}

/** The key of a MeshConfig's problems (cluster-scoped: namespace `""`), as {@link problemKeyOf} makes it. */
function problemKeyOfMeshConfig(object: KubeObject): string {
  const metadata: unknown = object.metadata;
  const name = isJsonObject(metadata) ? field(metadata, "name") : undefined;
  return `MeshConfig\u0000\u0000${typeof name === "string" ? name : ""}`;
}

/** The key of an identified BackendTLSPolicy's problems, as {@link problemKeyOf} makes it. */
function problemKeyOfPolicy(object: KubeObject): string {
  const metadata = object.metadata as JsonObject;
  return `BackendTLSPolicy\u0000${metadata.namespace as string}\u0000${metadata.name as string}`;
}

/**
 * The type and identity of an object, as the projector's object index reads
 * them (API group without version, kind, namespace, name).
 */
function classify(object: KubeObject): Classified {
  if (!isJsonObject(object)) return { type: "", identity: undefined, key: undefined };
  const { apiVersion, kind } = object as JsonObject;
  if (typeof apiVersion !== "string" || typeof kind !== "string") {
    return { type: "", identity: undefined, key: undefined };
  }
  const type = `${apiGroupOf(apiVersion)}/${kind}`;
  const metadata = (object as JsonObject).metadata;
  if (!isJsonObject(metadata)) return { type, identity: undefined, key: undefined };
  const name = field(metadata, "name");
  const namespace = field(metadata, "namespace");
  if (
    typeof name !== "string" ||
    name === "" ||
    typeof namespace !== "string" ||
    namespace === ""
  ) {
    return { type, identity: undefined, key: undefined };
  }
  const key = `${namespace}/${name}`;
  return { type, identity: `${type}\u0000${key}`, key };
}

/**
 * Reads what a route depends on, leniently (over-approximating is safe): the
 * Services its parentRefs (an HTTPFilter: its targetRefs, always in its own
 * namespace) name, and the Services every `backendRef` or
 * `backendRefs` entry anywhere in its spec names (rule backends, their
 * filters, mirrors).
 */
function describeRoute(object: KubeObject): RouteInfo {
  const namespace = (object.metadata as JsonObject).namespace as string;
  const spec = isJsonObject(object.spec) ? object.spec : {};
  const target = (ref: unknown): string | undefined => {
    if (!isJsonObject(ref)) return undefined;
    const name = field(ref, "name");
    const refNamespace = field(ref, "namespace");
    if (typeof name !== "string") return undefined;
    return `${typeof refNamespace === "string" ? refNamespace : namespace}/${name}`;
  };
  const parents = new Set<string>();
  const filter = object.kind === "HTTPFilter";
  const parentRefs = field(spec, filter ? "targetRefs" : "parentRefs");
  for (const ref of Array.isArray(parentRefs) ? parentRefs : []) {
    if (isJsonObject(ref) && field(ref, "kind") === "Service") {
      const name = field(ref, "name");
      const parent = filter
        ? typeof name === "string"
          ? `${namespace}/${name}`
          : undefined
        : target(ref);
      if (parent !== undefined) parents.add(parent);
    }
  }
  const backends = new Set<string>();
  const visited = new Set<object>();
  const scan = (value: unknown): void => {
    if (typeof value !== "object" || value === null || visited.has(value)) return;
    visited.add(value);
    if (Array.isArray(value)) {
      for (const item of value) scan(item);
      return;
    }
    for (const [key, child] of Object.entries(value)) {
      if (key === "backendRef") {
        const backend = target(child);
        if (backend !== undefined) backends.add(backend);
      } else if (key === "backendRefs" && Array.isArray(child)) {
        for (const ref of child) {
          const backend = target(ref);
          if (backend !== undefined) backends.add(backend);
        }
      }
      scan(child);
    }
  };
  scan(spec);
  return { parents: [...parents], backends: [...backends] };
}

/** The key of an identified route's problems: kind, namespace and name, as a RouteRef has them. */
function problemKeyOfRoute(object: KubeObject): string {
  const metadata = object.metadata as JsonObject;
  const kind =
    object.kind === "GRPCRoute" || object.kind === "HTTPFilter" ? object.kind : "HTTPRoute";
  return `${kind}\u0000${metadata.namespace as string}\u0000${metadata.name as string}`;
}

function problemKeyOf(problem: RouteRejection): string {
  return `${problem.route.kind}\u0000${problem.route.namespace}\u0000${problem.route.name}`;
}

function problemsOf(
  map: Map<string, { rejections: RouteRejection[]; warnings: RouteWarning[] }>,
  problem: RouteRejection,
): { rejections: RouteRejection[]; warnings: RouteWarning[] } {
  const key = problemKeyOf(problem);
  let entry = map.get(key);
  if (entry === undefined) {
    entry = { rejections: [], warnings: [] };
    map.set(key, entry);
  }
  return entry;
}

function allProblems(
  map: ReadonlyMap<string, { rejections: RouteRejection[]; warnings: RouteWarning[] }>,
): { rejections: RouteRejection[]; warnings: RouteWarning[] } {
  const rejections: RouteRejection[] = [];
  const warnings: RouteWarning[] = [];
  for (const entry of map.values()) {
    rejections.push(...entry.rejections);
    warnings.push(...entry.warnings);
  }
  return {
    rejections: rejections.sort(compareRouteProblems),
    warnings: warnings.sort(compareRouteProblems),
  };
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

function add<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else if (!list.includes(value)) list.push(value);
}

function remove<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) return;
  const at = list.indexOf(value);
  if (at >= 0) list.splice(at, 1);
  if (list.length === 0) map.delete(key);
}
