/**
 * The object index of the projector: a snapshot of Kubernetes objects, keyed
 * once by API group, kind, namespace and name, with the Service and
 * ReferenceGrant lookups the projector needs. Pure, no I/O.
 */
import {
  apiGroupOf,
  GATEWAY_API_GROUP,
  type KubeObject,
  MCS_API_GROUP,
  MESH_API_GROUP,
} from "./kube-object.js";
import { field, isJsonObject, type JsonObject } from "./projector-fields.js";

/** The API group and kind of an object, the part of its identity that is not its name. */
export interface ObjectType {
  /** The API group (`""` for the core group). */
  readonly group: string;
  /** The kind, for example `Service`. */
  readonly kind: string;
}

/** `HTTPRoute` in `gateway.networking.k8s.io` (any served version). */
export const HTTP_ROUTE: ObjectType = { group: GATEWAY_API_GROUP, kind: "HTTPRoute" };
/** `GRPCRoute` in `gateway.networking.k8s.io` (any served version). */
export const GRPC_ROUTE: ObjectType = { group: GATEWAY_API_GROUP, kind: "GRPCRoute" };
/** `ReferenceGrant` in `gateway.networking.k8s.io` (v1beta1 or v1). */
export const REFERENCE_GRANT: ObjectType = { group: GATEWAY_API_GROUP, kind: "ReferenceGrant" };
/** `BackendTLSPolicy` in `gateway.networking.k8s.io` (v1; v1alpha3 has the same shape). */
export const BACKEND_TLS_POLICY: ObjectType = {
  group: GATEWAY_API_GROUP,
  kind: "BackendTLSPolicy",
};
/** The core `ConfigMap` (a BackendTLSPolicy's CA certificates, under `ca.crt`). */
export const CONFIG_MAP: ObjectType = { group: "", kind: "ConfigMap" };
/** The core `Service`. */
export const SERVICE: ObjectType = { group: "", kind: "Service" };
/** The core `Namespace` (cluster-scoped). */
export const NAMESPACE: ObjectType = { group: "", kind: "Namespace" };
/** `HTTPFilter` in `mesh.aether.dev` (the proxy-extension escape hatch). */
export const HTTP_FILTER: ObjectType = { group: MESH_API_GROUP, kind: "HTTPFilter" };
/** `MeshConfig` in `mesh.aether.dev` (cluster-scoped; an origin's mesh-wide defaults). */
export const MESH_CONFIG: ObjectType = { group: MESH_API_GROUP, kind: "MeshConfig" };
/** `ServiceExport` in `multicluster.x-k8s.io`. */
export const SERVICE_EXPORT: ObjectType = { group: MCS_API_GROUP, kind: "ServiceExport" };

/** One port of a Service, as the projector uses it. */
export interface ServicePortInfo {
  /** The port's name (`""` when unnamed). */
  readonly name: string;
  /** The port number. */
  readonly port: number;
  /** The port's `appProtocol` (`""` when unset). */
  readonly appProtocol: string;
}

/** A Service, as the projector uses it. */
export interface ServiceInfo {
  /** `namespace/name`. */
  readonly key: string;
  /** The namespace. */
  readonly namespace: string;
  /** The name. */
  readonly name: string;
  /** The well-formed ports, in object order (malformed port entries are left out). */
  readonly ports: readonly ServicePortInfo[];
  /** Whether it is an `ExternalName` Service (not a valid mesh backend). */
  readonly externalName: boolean;
}

/**
 * A snapshot of Kubernetes objects indexed once, for repeated lookups. Objects
 * are identified by API group (not version), kind, namespace and name. When
 * the snapshot holds several objects with one identity, the index keeps one of
 * them deterministically (whatever the input order) and marks the identity as
 * ambiguous when their contents differ.
 */
export interface ObjectIndex {
  /** Returns the object with this identity; cluster-scoped objects use namespace `""`. */
  get(type: ObjectType, namespace: string, name: string): KubeObject | undefined;
  /** Returns the objects of a type, sorted by namespace then name. */
  list(type: ObjectType): readonly KubeObject[];
  /**
   * Returns the objects of a type that have no usable identity (missing or
   * malformed `metadata.name` or `metadata.namespace`), in input order.
   */
  unidentified(type: ObjectType): readonly KubeObject[];
  /** Reports whether several objects with different contents share this identity. */
  isAmbiguous(type: ObjectType, namespace: string, name: string): boolean;
  /** Returns the Service `namespace/name` as the projector reads it, or undefined. */
  service(namespace: string, name: string): ServiceInfo | undefined;
  /**
   * Reports whether a ReferenceGrant in `to.namespace` lets objects of type
   * `from` in `fromNamespace` refer to the object `to` (of type `toType`).
   */
  isReferenceGranted(
    from: ObjectType,
    fromNamespace: string,
    toType: ObjectType,
    to: { readonly namespace: string; readonly name: string },
  ): boolean;
}

interface Entry {
  object: KubeObject;
  canonical: string | undefined;
  ambiguous: boolean;
  /** The parsed Service (for Services), computed on first use. */
  service?: ServiceInfo;
}

/** Entries of one type: namespace, then name (cluster-scoped objects use namespace `""`). */
type Entries = Map<string, Map<string, Entry>>;

interface Grant {
  readonly from: readonly (ObjectType & { readonly namespace: string })[];
  readonly to: readonly (ObjectType & { readonly name: string | undefined })[];
}

const CLUSTER_SCOPED = new Set([typeKey(NAMESPACE), typeKey(MESH_CONFIG)]);

/**
 * Indexes `objects` in one pass. Objects that are not JSON objects, or whose
 * `apiVersion` or `kind` is not a string, are skipped; objects without a usable
 * name are kept aside ({@link ObjectIndex.unidentified}). Never throws.
 */
export function createObjectIndex(objects: readonly KubeObject[]): ObjectIndex {
  const byType = new Map<string, Entries>();
  const unidentified = new Map<string, KubeObject[]>();
  for (const object of Array.isArray(objects) ? objects : []) {
    if (!isJsonObject(object)) continue;
    const { apiVersion, kind } = object;
    if (typeof apiVersion !== "string" || typeof kind !== "string") continue;
    const type = typeKey({ group: apiGroupOf(apiVersion), kind });
    const identity = identityOf(object, CLUSTER_SCOPED.has(type));
    if (identity === undefined) {
      pushTo(unidentified, type, object);
      continue;
    }
    const [namespace, name] = identity;
    const names = getOrCreate(
      getOrCreate(byType, type, () => new Map()),
      namespace,
      () => new Map(),
    );
    const existing = names.get(name);
    if (existing === undefined) names.set(name, { object, canonical: undefined, ambiguous: false });
    else mergeDuplicate(existing, object);
  }

  const sorted = new Map<string, readonly KubeObject[]>();
  let grants: Map<string, Grant[]> | undefined;

  const entry = (type: ObjectType, namespace: string, name: string): Entry | undefined =>
    byType.get(typeKey(type))?.get(namespace)?.get(name);

  const index: ObjectIndex = {
    get: (type, namespace, name) => entry(type, namespace, name)?.object,
    list(type) {
      const key = typeKey(type);
      let list = sorted.get(key);
      if (list === undefined) {
        const namespaces = byType.get(key) ?? new Map<string, Map<string, Entry>>();
        list = [...namespaces.keys()].sort(compareStrings).flatMap((namespace) => {
          const names = namespaces.get(namespace) as Map<string, Entry>;
          return [...names.keys()].sort(compareStrings).map((n) => (names.get(n) as Entry).object);
        });
        sorted.set(key, list);
      }
      return list;
    },
    unidentified: (type) => unidentified.get(typeKey(type)) ?? [],
    isAmbiguous: (type, namespace, name) => entry(type, namespace, name)?.ambiguous ?? false,
    service(namespace, name) {
      const found = entry(SERVICE, namespace, name);
      if (found === undefined) return undefined;
      found.service ??= parseService(found.object, namespace, name);
      return found.service;
    },
    isReferenceGranted(from, fromNamespace, toType, to) {
      if (grants === undefined) {
        grants = new Map();
        for (const grant of index.list(REFERENCE_GRANT)) {
          pushTo(grants, grant.metadata?.namespace as string, parseGrant(grant));
        }
      }
      return (grants.get(to.namespace) ?? []).some(
        (grant) =>
          grant.from.some(
            (f) => f.group === from.group && f.kind === from.kind && f.namespace === fromNamespace,
          ) &&
          grant.to.some(
            (t) =>
              t.group === toType.group &&
              t.kind === toType.kind &&
              (t.name === undefined || t.name === to.name),
          ),
      );
    },
  };
  return index;
}

/**
 * Compares two strings by UTF-16 code units: the locale-independent order the
 * projector sorts by, so output never depends on the host's locale.
 */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}

/** An object as the projector's conflict rule sees it: its creation time and identity. */
export interface AgedObject {
  /** Its creation time in nanoseconds since the epoch; undefined when it has none (newest). */
  readonly created: bigint | undefined;
  /** Its namespace. */
  readonly namespace: string;
  /** Its name. */
  readonly name: string;
}

/**
 * The conflict rule of the policy kinds (BackendTLSPolicy, VirtualHost), as
 * for routes: the older object first (one without a creation time counts as
 * newest), then namespace, then name, by {@link compareStrings}.
 */
export function compareOldestFirst(a: AgedObject, b: AgedObject): number {
  const x = a.created;
  const y = b.created;
  if (x !== y) {
    if (x === undefined) return 1;
    if (y === undefined) return -1;
    return x < y ? -1 : 1;
  }
  return compareStrings(a.namespace, b.namespace) || compareStrings(a.name, b.name);
}

/**
 * Why `winner` beat `loser` under {@link compareOldestFirst}, for a
 * `conflicted` message: `"is older"` or `"comes first by namespace/name"`.
 */
export function whyOlderWins(winner: AgedObject, loser: AgedObject): string {
  return winner.created === loser.created ? "comes first by namespace/name" : "is older";
}

function typeKey(type: ObjectType): string {
  return `${type.group}/${type.kind}`;
}

/** The namespace (`""` for cluster-scoped kinds) and name of an object, when usable. */
function identityOf(object: KubeObject, clusterScoped: boolean): [string, string] | undefined {
  const metadata: unknown = object.metadata;
  if (!isJsonObject(metadata)) return undefined;
  const name = field(metadata, "name");
  if (typeof name !== "string" || name === "") return undefined;
  const namespace = field(metadata, "namespace");
  if (clusterScoped) return namespace === undefined || namespace === "" ? ["", name] : undefined;
  if (typeof namespace !== "string" || namespace === "") return undefined;
  return [namespace, name];
}

/** Returns the value of `key` in `map`, first storing `make()` there when it has none. */
export function getOrCreate<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  getOrCreate(map, key, () => []).push(value);
}

/** Keeps the duplicate with the smaller canonical JSON, so input order does not matter. */
function mergeDuplicate(existing: Entry, object: KubeObject): void {
  existing.canonical ??= canonicalJson(existing.object);
  const candidate = canonicalJson(object);
  if (candidate === existing.canonical) return;
  existing.ambiguous = true;
  if (compareStrings(candidate, existing.canonical) < 0) {
    existing.object = object;
    existing.canonical = candidate;
  }
}

type Task = { readonly text: string } | { readonly value: unknown } | { readonly leave: object };

/**
 * JSON with object keys sorted, built without recursion so that any depth
 * works; `""` for a value with a cycle (not JSON). Equal values give equal
 * text whatever their key order.
 */
export function canonicalJson(root: unknown): string {
  const parts: string[] = [];
  const tasks: Task[] = [{ value: root }];
  const onPath = new Set<object>();
  for (let task = tasks.pop(); task !== undefined; task = tasks.pop()) {
    if ("text" in task) {
      parts.push(task.text);
      continue;
    }
    if ("leave" in task) {
      onPath.delete(task.leave);
      continue;
    }
    const value = task.value;
    if (typeof value !== "object" || value === null) {
      parts.push(typeof value === "bigint" ? String(value) : (JSON.stringify(value) ?? "null"));
      continue;
    }
    if (onPath.has(value)) return "";
    onPath.add(value);
    const isArray = Array.isArray(value);
    const record = value as Record<string, unknown>;
    const keys = isArray ? value.map((_, i) => String(i)) : Object.keys(value).sort();
    parts.push(isArray ? "[" : "{");
    tasks.push({ leave: value }, { text: isArray ? "]" : "}" });
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i] as string;
      tasks.push({ value: record[key] });
      const prefix = `${i > 0 ? "," : ""}${isArray ? "" : `${JSON.stringify(key)}:`}`;
      if (prefix !== "") tasks.push({ text: prefix });
    }
  }
  return parts.join("");
}

function parseService(object: KubeObject, namespace: string, name: string): ServiceInfo {
  const spec = isJsonObject(object.spec) ? object.spec : {};
  const rawPorts = field(spec, "ports");
  const ports: ServicePortInfo[] = [];
  for (const raw of Array.isArray(rawPorts) ? rawPorts : []) {
    if (!isJsonObject(raw)) continue;
    const port = field(raw, "port");
    if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535) continue;
    const portName = field(raw, "name");
    const appProtocol = field(raw, "appProtocol");
    ports.push({
      name: typeof portName === "string" ? portName : "",
      port,
      appProtocol: typeof appProtocol === "string" ? appProtocol : "",
    });
  }
  return {
    key: `${namespace}/${name}`,
    namespace,
    name,
    ports,
    externalName: field(spec, "type") === "ExternalName",
  };
}

function parseGrant(object: KubeObject): Grant {
  const spec = isJsonObject(object.spec) ? object.spec : {};
  const from: (ObjectType & { namespace: string })[] = [];
  for (const raw of listOfObjects(field(spec, "from"))) {
    const { group, kind, namespace } = raw;
    if (typeof group === "string" && typeof kind === "string" && typeof namespace === "string") {
      from.push({ group, kind, namespace });
    }
  }
  const to: (ObjectType & { name: string | undefined })[] = [];
  for (const raw of listOfObjects(field(spec, "to"))) {
    const { group, kind } = raw;
    const name = field(raw, "name");
    if (typeof group !== "string" || typeof kind !== "string") continue;
    if (name !== undefined && typeof name !== "string") continue;
    to.push({ group, kind, name: name === "" ? undefined : name });
  }
  return { from, to };
}

function listOfObjects(value: unknown): JsonObject[] {
  return Array.isArray(value) ? value.filter(isJsonObject) : [];
}
