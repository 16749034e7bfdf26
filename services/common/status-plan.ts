/**
 * The status writes one export run implies: for every route and attached
 * policy of the snapshot, the registrar's wanted entries (`route-status.ts`,
 * `policy-status.ts`) merged into what the object's status holds
 * (`status-merge.ts`); an object whose own entries are already right gives
 * no write. Each write is a JSON merge patch of the status subresource with
 * the whole list (a merge patch replaces a list; the Gateway API lists are
 * atomic, so server-side apply could not merge entries either) and the
 * object's `resourceVersion` as a precondition, so a status another writer
 * changed in between is refused (409) rather than overwritten. Given a
 * memo (`status-memo.ts`), an object last planned in sync whose
 * resourceVersion and inputs are unchanged is skipped. Pure but for the
 * memo passed in: the time is passed in.
 */
import type { FleetSummary } from "./fleet-condition.js";
import { apiGroupOf, GATEWAY_API_GROUP, type KubeObject, MESH_API_GROUP } from "./kube-object.js";
import { wantedPolicyAncestors } from "./policy-status.js";
import type { RouteRejection, RouteWarning } from "./projector.js";
import { field, isJsonObject, type JsonObject } from "./projector-fields.js";
import { getOrCreate } from "./projector-index.js";
import {
  type ObjectProblems,
  problemKey,
  type StatusContext,
  wantedRouteParents,
} from "./route-status.js";
import { type StatusMemo, statusInputsOf } from "./status-memo.js";
import { mergeStatusEntries } from "./status-merge.js";

/** What one export run decided, which the status is written from. */
export interface StatusInputs {
  /** The source's snapshot, as the API server sent the objects (with their status). */
  readonly objects: readonly KubeObject[];
  /** The Services the hub projects (`namespace/name`). */
  readonly services: ReadonlySet<string>;
  /** Every rejection in force (the projector's and the projection limits'). */
  readonly rejections: readonly RouteRejection[];
  /** Every warning in force. */
  readonly warnings: readonly RouteWarning[];
  /**
   * The fleet's view of each projected Service, when the registrar follows
   * the fleet: accepted route parents then carry the fleet condition.
   */
  readonly fleet?: ReadonlyMap<string, FleetSummary>;
}

/** The kinds whose status is written: their plural, status list and its `maxItems`. */
const STATUS_KINDS: Readonly<
  Record<string, { group: string; plural: string; list: "parents" | "ancestors"; max: number }>
> = {
  HTTPRoute: { group: GATEWAY_API_GROUP, plural: "httproutes", list: "parents", max: 32 },
  GRPCRoute: { group: GATEWAY_API_GROUP, plural: "grpcroutes", list: "parents", max: 32 },
  BackendTLSPolicy: {
    group: GATEWAY_API_GROUP,
    plural: "backendtlspolicies",
    list: "ancestors",
    max: 16,
  },
  HTTPFilter: { group: MESH_API_GROUP, plural: "httpfilters", list: "ancestors", max: 16 },
  VirtualHost: { group: MESH_API_GROUP, plural: "virtualhosts", list: "ancestors", max: 16 },
};

/**
 * The status subresources written, as `group/plural/status` (what the
 * export ClusterRole grants `patch` on, and nothing else).
 */
export const STATUS_WRITTEN_RESOURCES: readonly string[] = Object.values(STATUS_KINDS).map(
  (k) => `${k.group}/${k.plural}/status`,
);

/** One status write: where, the precondition, and the merge patch body. */
export interface StatusPatch {
  /** The object's kind, for logs and metrics. */
  readonly kind: string;
  /** Its namespace. */
  readonly namespace: string;
  /** Its name. */
  readonly name: string;
  /** The path of its status subresource, for example `/apis/gateway.networking.k8s.io/v1/namespaces/shop/httproutes/cart/status`. */
  readonly path: string;
  /** The `resourceVersion` the status was read at (the patch's precondition). */
  readonly resourceVersion: string;
  /** The JSON merge patch: `{metadata: {resourceVersion}, status: {parents|ancestors: [...]}}`. */
  readonly body: JsonObject;
}

/**
 * The status patches `inputs` imply at time `now` (RFC 3339, whole
 * seconds), in snapshot order: one per route or policy whose own entries
 * would change, including one that now wants none (its stale own entries
 * are removed). Objects without namespace, name or resourceVersion are
 * skipped (a manifest, not an API object). With `memo`, an object it holds
 * in sync at the same resourceVersion and inputs is skipped unplanned, one
 * found in sync is remembered, and one found out of sync or not in the
 * snapshot any more forgotten.
 */
export function planStatusPatches(
  inputs: StatusInputs,
  now: string,
  memo?: StatusMemo,
): StatusPatch[] {
  const context = statusContext(inputs);
  memo?.begin();
  const patches: StatusPatch[] = [];
  for (const object of inputs.objects) {
    const kind = object.kind ?? "";
    const info = STATUS_KINDS[kind];
    if (info === undefined || apiGroupOf(object.apiVersion) !== info.group) continue;
    const { namespace, name, resourceVersion, generation } = object.metadata ?? {};
    if (typeof namespace !== "string" || typeof name !== "string") continue;
    if (typeof resourceVersion !== "string") continue;
    const path = `/apis/${object.apiVersion}/namespaces/${namespace}/${info.plural}/${name}/status`;
    const own =
      memo === undefined ? "" : statusInputsOf(object, kind, namespace, info.list, context);
    if (memo?.unchanged(path, resourceVersion, own)) continue;
    const wanted =
      info.list === "parents"
        ? wantedRouteParents(object, kind, namespace, context)
        : wantedPolicyAncestors(object, kind, namespace, context);
    const status: unknown = (object as { status?: unknown }).status;
    const current = isJsonObject(status) ? field(status, info.list) : undefined;
    const list = mergeStatusEntries(current, wanted, {
      refField: info.list === "parents" ? "parentRef" : "ancestorRef",
      generation: typeof generation === "number" ? generation : undefined,
      now,
      maxItems: info.max,
    });
    if (list === undefined) {
      memo?.inSync(path, resourceVersion, own);
      continue;
    }
    memo?.forget(path);
    patches.push({
      kind,
      namespace,
      name,
      path,
      resourceVersion,
      body: { metadata: { resourceVersion }, status: { [info.list]: list } },
    });
  }
  return patches;
}

/** The projected Services, every Service's ports and the problems by object. */
function statusContext(inputs: StatusInputs): StatusContext {
  const ports = new Map<string, { name: string; port: number }[]>();
  for (const object of inputs.objects) {
    if (object.kind !== "Service" || apiGroupOf(object.apiVersion) !== "") continue;
    const { namespace, name } = object.metadata ?? {};
    if (typeof namespace !== "string" || typeof name !== "string") continue;
    const spec = isJsonObject(object.spec) ? object.spec : {};
    const list = field(spec, "ports");
    ports.set(
      `${namespace}/${name}`,
      (Array.isArray(list) ? list : []).filter(isJsonObject).map((p) => ({
        name: typeof p.name === "string" ? p.name : "",
        port: typeof p.port === "number" ? p.port : 0,
      })),
    );
  }
  const problems = new Map<string, ObjectProblems>();
  const add = (p: RouteRejection, which: keyof ObjectProblems) => {
    const key = problemKey(p.route.kind, p.route.namespace, p.route.name);
    getOrCreate(problems, key, () => ({ rejections: [], warnings: [] }))[which].push(p);
  };
  for (const p of inputs.rejections) add(p, "rejections");
  for (const p of inputs.warnings) add(p, "warnings");
  return { services: inputs.services, ports, problems, fleet: inputs.fleet };
}
