/**
 * One kind (resource) the Kubernetes source follows: where it is listed and
 * watched, what the source keeps about it, and how its state moves when its
 * informer reports something. A kind is listed (it counts towards `synced`)
 * once its informer applied a list or the server was found not to serve it
 * (404, a CRD that is not installed: the kind is then empty and a problem
 * until it is served again); a failure is a problem until a watch connects
 * again. The transitions ({@link stepKind}) are a pure function; the
 * informer around them is in `kube-informer.ts`.
 */
import type { KubernetesObject, ListWatch } from "@kubernetes/client-node";
import type { Backoff } from "../runtime/backoff.js";
import type { SourceProblem } from "./object-source.js";

/** A resource the source watches. */
export interface KubeResource {
  /** The API group (`""` for the core group). */
  readonly group: string;
  /** The version served. */
  readonly version: string;
  /** The plural resource name used in paths. */
  readonly plural: string;
  /** The kind of its objects. */
  readonly kind: string;
  /** True when its objects live in namespaces. */
  readonly namespaced: boolean;
}

/** The part of a kind's state that its informer's reports change (see {@link stepKind}). */
export interface KindStatus {
  /** Listed at least once (or found missing): counts towards `synced`. */
  readonly listed: boolean;
  /** The server does not serve the resource (404): treated as empty. */
  readonly missing: boolean;
  /** Why the kind is not followed as it should be, if it is not. */
  readonly problem: SourceProblem | undefined;
}

/** What the source keeps per resource. */
export interface KindState extends KindStatus {
  readonly resource: KubeResource;
  readonly apiVersion: string;
  /** The list and watch path. */
  readonly path: string;
  /** The field selector (the Namespace kind, when watching one namespace: its own name). */
  readonly fieldSelector: string | undefined;
  /** `kubernetes:PATH`, where problems are said to be. */
  readonly where: string;
  informer: ListWatch<KubernetesObject> | undefined;
  /** Bumped when the informer is replaced, so that a replaced one's callbacks are ignored. */
  generation: number;
  listed: boolean;
  missing: boolean;
  /** The retry delays after failures in a row. */
  readonly backoff: Backoff;
  problem: SourceProblem | undefined;
  retryTimer: NodeJS.Timeout | undefined;
}

/** The API path of a resource, in one namespace or all. */
function resourcePath(resource: KubeResource, namespace: string | undefined): string {
  const base =
    resource.group === ""
      ? `/api/${resource.version}`
      : `/apis/${resource.group}/${resource.version}`;
  const scoped = resource.namespaced && namespace !== undefined;
  return `${base}/${scoped ? `namespaces/${encodeURIComponent(namespace)}/` : ""}${resource.plural}`;
}

/**
 * The initial state of `resource`, watched in `namespace` (all when
 * undefined; the Namespace kind is then watched with a field selector on
 * that namespace's name, any other cluster-scoped kind, such as MeshConfig,
 * whole): not listed, no informer, no problem, failures retried after the
 * delays of `backoff`.
 */
export function createKindState(
  resource: KubeResource,
  namespace: string | undefined,
  backoff: Backoff,
): KindState {
  const path =
    resource.namespaced || namespace === undefined
      ? resourcePath(resource, namespace)
      : resourcePath(resource, undefined);
  return {
    resource,
    apiVersion: resource.group === "" ? resource.version : `${resource.group}/${resource.version}`,
    path,
    fieldSelector:
      resource.kind === "Namespace" && namespace !== undefined
        ? `metadata.name=${namespace}`
        : undefined,
    where: `kubernetes:${path}`,
    informer: undefined,
    generation: 0,
    listed: false,
    missing: false,
    backoff,
    problem: undefined,
    retryTimer: undefined,
  };
}

/** What a kind's informer reported (see {@link stepKind}). */
export type KindEvent =
  /** The informer applied a list (or resumes a watch): the kind has data. */
  | { readonly type: "listed" }
  /** A watch request was answered with 200. */
  | { readonly type: "connected" }
  /** A list or watch was answered with 404: the server does not serve the resource. */
  | { readonly type: "not-served" }
  /** A list or watch failed otherwise (the informer has stopped), with this message. */
  | { readonly type: "failed"; readonly message: string };

/** What one event does to a kind; see {@link stepKind}. */
export interface KindStep {
  /** The kind's status after the event. */
  readonly status: KindStatus;
  /**
   * A transition worth telling the operator about: the server stopped
   * serving the resource, serves it again, or a watch connected again
   * after a failure. Undefined when there is none.
   */
  readonly note: "not-served" | "served-again" | "watching-again" | undefined;
  /** The kind's objects appeared or vanished as a whole: the snapshot is to be published. */
  readonly changed: boolean;
  /** The failures in a row are over: the retry backoff starts again. */
  readonly resetBackoff: boolean;
}

/**
 * The transition of a kind (`kind`, of status `status`) on `event`, pure:
 * - `listed`: the kind is listed; when it was missing it is served again
 *   (no longer missing, its problem gone, the snapshot changed).
 * - `connected`: the backoff resets and a problem goes away (watching again).
 * - `not-served`: the kind is listed, missing and empty (the snapshot
 *   changed), the backoff resets, and the problem says so and that it is
 *   tried again every `missingRetryMs`; noted only when it was not missing.
 * - `failed`: the problem says that listing or watching failed.
 */
export function stepKind(
  kind: Pick<KindState, "resource" | "apiVersion" | "where">,
  missingRetryMs: number,
  status: KindStatus,
  event: KindEvent,
): KindStep {
  const { listed, missing, problem } = status;
  const step = (next: Partial<KindStatus>, rest: Partial<Omit<KindStep, "status">> = {}) => ({
    status: { listed, missing, problem, ...next },
    note: undefined,
    changed: false,
    resetBackoff: false,
    ...rest,
  });
  switch (event.type) {
    case "listed":
      if (!missing) return step({ listed: true });
      return step(
        { listed: true, missing: false, problem: undefined },
        { note: "served-again", changed: true },
      );
    case "connected":
      if (problem === undefined) return step({}, { resetBackoff: true });
      return step({ problem: undefined }, { note: "watching-again", resetBackoff: true });
    case "not-served":
      return step(
        {
          listed: true,
          missing: true,
          problem: {
            where: kind.where,
            message:
              `the API server does not serve ${kind.resource.plural} (${kind.apiVersion}); ` +
              `is its CustomResourceDefinition installed? Treated as empty and tried again ` +
              `every ${missingRetryMs} ms`,
          },
        },
        { note: missing ? undefined : "not-served", changed: true, resetBackoff: true },
      );
    case "failed":
      return step({
        problem: { where: kind.where, message: `listing or watching failed: ${event.message}` },
      });
  }
}

/**
 * Fixes up an object of `kind` as received: drops its
 * `metadata.managedFields` and, of a ConfigMap, every data key but `ca.crt`
 * and its `binaryData` (in place: the projector reads nothing else of a
 * ConfigMap, and a cluster's ConfigMaps can be large) and returns it, or, when it lacks
 * `apiVersion` or `kind` (the API server leaves them out of built-in list
 * items), a shallow copy whose missing ones are the kind's.
 */
export function adoptObject(kind: KindState, object: unknown): KubernetesObject {
  const target = object as KubernetesObject & { metadata?: { managedFields?: unknown } };
  if (target.metadata !== undefined) delete target.metadata.managedFields;
  if (kind.resource.kind === "ConfigMap")
    keepCaCertificate(target as { data?: unknown; binaryData?: unknown });
  if (target.apiVersion !== undefined && target.kind !== undefined) return target;
  return { apiVersion: kind.apiVersion, kind: kind.resource.kind, ...target };
}

/** Drops every data key of a ConfigMap but `ca.crt`, and its binaryData, in place. */
function keepCaCertificate(configMap: { data?: unknown; binaryData?: unknown }): void {
  delete configMap.binaryData;
  const data = configMap.data;
  if (typeof data !== "object" || data === null) return;
  for (const key of Object.keys(data)) {
    if (key !== "ca.crt") delete (data as Record<string, unknown>)[key];
  }
}
