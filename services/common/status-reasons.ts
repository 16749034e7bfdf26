/**
 * The Gateway API names of the projector's problems, for the status the hub
 * writes back to the objects it projects: a route's `Accepted` and
 * `ResolvedRefs` conditions (`RouteConditionType`, `RouteConditionReason` in
 * Gateway API's `apis/v1/shared_types.go`) and a policy's GEP-713 `Accepted`
 * condition (`PolicyConditionReason`). Pure tables, no I/O.
 */

/** The `controllerName` of every status entry the registrar writes (a domain-prefixed path, as the API requires). */
export const STATUS_CONTROLLER_NAME = "mesh.aether.dev/registrar";

/** Which route condition a projector reason makes False, and with which upstream reason. */
export interface RouteReason {
  /** `Accepted` (the route is not exported) or `ResolvedRefs` (a reference does not resolve). */
  readonly condition: "Accepted" | "ResolvedRefs";
  /** The `RouteConditionReason`, for example `UnsupportedValue` or `BackendNotFound`. */
  readonly reason: string;
}

/** The projector's reasons that concern a reference (`ResolvedRefs`), by upstream reason. */
const RESOLVED_REFS_REASONS: Readonly<Record<string, string>> = {
  backend_not_found: "BackendNotFound",
  unsupported_backend: "InvalidKind",
  invalid_kind: "InvalidKind",
  ref_not_permitted: "RefNotPermitted",
};

/** The projector's reasons that reject a route (`Accepted`) with a reason other than `UnsupportedValue`. */
const ACCEPTED_REASONS: Readonly<Record<string, string>> = {
  no_matching_parent: "NoMatchingParent",
  invalid_filter: "IncompatibleFilters",
  unknown_filter: "IncompatibleFilters",
};

/**
 * The route condition and upstream reason for a projector reason:
 * `backend_not_found` → ResolvedRefs/BackendNotFound, `unsupported_backend`
 * and `invalid_kind` → ResolvedRefs/InvalidKind, `ref_not_permitted` →
 * ResolvedRefs/RefNotPermitted, `no_matching_parent` →
 * Accepted/NoMatchingParent, `invalid_filter` and `unknown_filter` →
 * Accepted/IncompatibleFilters, and every other reason (an invalid or
 * unsupported value, a duplicate object, `too_large`) →
 * Accepted/UnsupportedValue.
 */
export function routeReasonOf(reason: string): RouteReason {
  const refs = RESOLVED_REFS_REASONS[reason];
  if (refs !== undefined) return { condition: "ResolvedRefs", reason: refs };
  return { condition: "Accepted", reason: ACCEPTED_REASONS[reason] ?? "UnsupportedValue" };
}

/**
 * The GEP-713 `PolicyConditionReason` of a policy's `Accepted` False for a
 * projector reason: `conflicted` → Conflicted, `unknown_target` →
 * TargetNotFound, anything else → Invalid.
 */
export function policyReasonOf(reason: string): string {
  if (reason === "conflicted") return "Conflicted";
  if (reason === "unknown_target") return "TargetNotFound";
  return "Invalid";
}
