/**
 * The GAMMA `status.parents` entries the registrar wants on one HTTPRoute or
 * GRPCRoute: one per distinct Service parentRef naming a Service the hub
 * projects, with the `Accepted` and `ResolvedRefs` conditions the
 * projector's rejections and warnings of the route imply (reasons mapped by
 * `status-reasons.ts`). Pure, no I/O.
 */
import { type FleetSummary, fleetCondition } from "./fleet-condition.js";
import type { KubeObject } from "./kube-object.js";
import type { RouteRejection, RouteWarning } from "./projector.js";
import { field, isJsonObject, type JsonObject } from "./projector-fields.js";
import type { WantedCondition, WantedEntry } from "./status-merge.js";
import { routeReasonOf } from "./status-reasons.js";

/** What the status of every projected object is decided from. */
export interface StatusContext {
  /** The Services the hub projects (`namespace/name`). */
  readonly services: ReadonlySet<string>;
  /** Every Service of the snapshot (`namespace/name`) with its ports. */
  readonly ports: ReadonlyMap<string, readonly { readonly name: string; readonly port: number }[]>;
  /** The projector's rejections and warnings of one object, by `kind/namespace/name`. */
  readonly problems: ReadonlyMap<string, ObjectProblems>;
  /**
   * The fleet's view of each projected Service, when the registrar follows
   * the fleet's status: then an accepted parent entry also carries the
   * fleet condition (`fleet-condition.ts`); undefined: it carries none.
   */
  readonly fleet?: ReadonlyMap<string, FleetSummary>;
}

/** The rejections and warnings of one object. */
export interface ObjectProblems {
  /** Why it (or its attachment to a service) was left out. */
  readonly rejections: RouteRejection[];
  /** What is wrong in it although it was projected. */
  readonly warnings: RouteWarning[];
}

/** No problems. */
const NONE: ObjectProblems = { rejections: [], warnings: [] };

/** The key of {@link StatusContext.problems}. */
export function problemKey(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

/**
 * The parent entries wanted on `route` (namespace `namespace`, kind `kind`):
 * for each Service parentRef (group `""`, kind `Service`) naming a projected
 * Service, in spec order, once per distinct reference:
 * - `Accepted` False `NoMatchingParent` when its port or sectionName names no
 *   port of the Service; else False with the mapped reason of a rejection of
 *   the route for that Service; else True;
 * - `ResolvedRefs` False with the mapped reason of the route's first
 *   reference warning (or reference rejection) for that Service; else True;
 * - with `context.fleet`, when `Accepted` is True, the fleet condition of
 *   the Service (`fleet-condition.ts`).
 */
export function wantedRouteParents(
  route: KubeObject,
  kind: string,
  namespace: string,
  context: StatusContext,
): WantedEntry[] {
  const problems = context.problems.get(problemKey(kind, namespace, route.metadata?.name ?? ""));
  const spec = isJsonObject(route.spec) ? route.spec : {};
  const list = field(spec, "parentRefs");
  const entries: WantedEntry[] = [];
  const seen = new Set<string>();
  (Array.isArray(list) ? list : []).forEach((raw: unknown, index) => {
    const ref = serviceParentRef(raw, namespace);
    if (ref === undefined) return;
    const key = `${ref.namespace}/${ref.name}`;
    const identity = `${ref.namespace}/${ref.name}/${ref.sectionName ?? ""}/${ref.port ?? ""}`;
    if (!context.services.has(key) || seen.has(identity)) return;
    seen.add(identity);
    const ports = context.ports.get(key) ?? [];
    const conditions = parentConditions(problems ?? NONE, key, portMismatch(ref, ports, index));
    if (context.fleet !== undefined && conditions[0]?.status === "True") {
      conditions.push(fleetCondition(key, context.fleet.get(key)));
    }
    entries.push({ ref, conditions });
  });
  return entries;
}

/** The parentRef as written in status (every field explicit), or undefined when not a Service's. */
function serviceParentRef(raw: unknown, routeNamespace: string): JsonObject | undefined {
  if (!isJsonObject(raw) || field(raw, "group") !== "" || field(raw, "kind") !== "Service") {
    return undefined;
  }
  const name = field(raw, "name");
  const namespace = field(raw, "namespace") ?? routeNamespace;
  if (typeof name !== "string" || typeof namespace !== "string") return undefined;
  const sectionName = field(raw, "sectionName");
  const port = field(raw, "port");
  return {
    group: "",
    kind: "Service",
    namespace,
    name,
    ...(typeof sectionName === "string" ? { sectionName } : {}),
    ...(typeof port === "number" ? { port } : {}),
  };
}

/** Why the parentRef at `index` attaches to no port of its Service, or undefined when it does. */
function portMismatch(
  ref: JsonObject,
  ports: readonly { readonly name: string; readonly port: number }[],
  index: number,
): string | undefined {
  const { sectionName, port } = ref as { sectionName?: string; port?: number };
  const named = sectionName === undefined ? undefined : ports.find((p) => p.name === sectionName);
  const numbered = port === undefined ? undefined : ports.find((p) => p.port === port);
  const fits =
    (sectionName === undefined || named !== undefined) &&
    (port === undefined || numbered !== undefined) &&
    (named === undefined || numbered === undefined || named === numbered);
  if (fits) return undefined;
  return `spec.parentRefs[${index}] names a port or sectionName Service ${ref.namespace}/${ref.name} has no port of`;
}

/** The two conditions of one parent entry for Service `key`. */
function parentConditions(
  problems: ObjectProblems,
  key: string,
  mismatch: string | undefined,
): WantedCondition[] {
  const concerns = (p: RouteRejection) => p.services.includes(key) || p.services.length === 0;
  const rejection = problems.rejections.find(
    (p) => concerns(p) && p.reason !== "no_matching_parent",
  );
  const refProblem = [...problems.warnings, ...(rejection === undefined ? [] : [rejection])].find(
    (p) => concerns(p) && routeReasonOf(p.reason).condition === "ResolvedRefs",
  );
  let accepted: WantedCondition;
  if (mismatch !== undefined) {
    accepted = condition("Accepted", "NoMatchingParent", mismatch);
  } else if (rejection !== undefined) {
    const mapped = routeReasonOf(rejection.reason);
    const reason = mapped.condition === "Accepted" ? mapped.reason : "UnsupportedValue";
    accepted = condition("Accepted", reason, `not exported: ${rejection.message}`);
  } else {
    accepted = {
      type: "Accepted",
      status: "True",
      reason: "Accepted",
      message: `exported with the projection of Service ${key}`,
    };
  }
  const resolved: WantedCondition =
    refProblem === undefined
      ? {
          type: "ResolvedRefs",
          status: "True",
          reason: "ResolvedRefs",
          message: "every reference resolved",
        }
      : condition("ResolvedRefs", routeReasonOf(refProblem.reason).reason, refProblem.message);
  return [accepted, resolved];
}

/** A False condition. */
function condition(type: string, reason: string, message: string): WantedCondition {
  return { type, status: "False", reason, message };
}
