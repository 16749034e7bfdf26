/**
 * The Kubernetes objects the projector reads, as plain JSON (what a manifest
 * file or the API server gives). Pure types and accessors, no I/O. The
 * projector validates every field it uses, so these types are deliberately
 * loose: input is untrusted.
 */

/** Object metadata, the fields the channel uses. */
export interface KubeMetadata {
  /** The object's name. */
  readonly name?: string;
  /** The object's namespace (namespaced kinds). */
  readonly namespace?: string;
  /** RFC 3339 creation time, set by the API server. */
  readonly creationTimestamp?: string;
  /** The resource version, set by the API server. */
  readonly resourceVersion?: string;
  /** Labels. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Annotations. */
  readonly annotations?: Readonly<Record<string, string>>;
  /** The generation, set by the API server. */
  readonly generation?: number;
}

/** Any Kubernetes object: apiVersion, kind, metadata and an untyped spec. */
export interface KubeObject {
  /** For example `gateway.networking.k8s.io/v1`. */
  readonly apiVersion?: string;
  /** For example `HTTPRoute`. */
  readonly kind?: string;
  /** Metadata. */
  readonly metadata?: KubeMetadata;
  /** The spec, unvalidated. */
  readonly spec?: unknown;
}

/** The API group of Gateway API objects. */
export const GATEWAY_API_GROUP = "gateway.networking.k8s.io";
/** The API group of aether's own mesh objects (HTTPFilter). */
export const MESH_API_GROUP = "mesh.aether.dev";
/** The API group of Multi-Cluster Services objects. */
export const MCS_API_GROUP = "multicluster.x-k8s.io";

/** Returns the API group of an `apiVersion` (`""` for the core group). */
export function apiGroupOf(apiVersion: string | undefined): string {
  if (apiVersion === undefined) return "";
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? "" : apiVersion.slice(0, slash);
}

/** Returns `namespace/name` of a namespaced object, or undefined when either is missing. */
export function objectKey(object: KubeObject): string | undefined {
  const { namespace, name } = object.metadata ?? {};
  if (typeof namespace !== "string" || typeof name !== "string") return undefined;
  if (namespace === "" || name === "") return undefined;
  return `${namespace}/${name}`;
}
