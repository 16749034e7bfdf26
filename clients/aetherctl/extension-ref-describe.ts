/**
 * An ExtensionRef filter in words, for `aetherctl get` and `aetherctl
 * explain`: the reference, and for an HTTPFilter reference a consumer (an
 * agent) resolved in its own cluster, the filter's contents as the
 * Service-attached HTTP filters are shown, or why it could not be resolved
 * (requests running it get 500). Pure.
 */
import type { ExtensionRef } from "../../gen/aether/registry/v1/projection_pb.js";
import { isHttpFilterRef } from "../../services/common/extension-ref-resolve.js";
import { describeExtension, httpFilterHeading } from "./http-filter-describe.js";

/**
 * `mesh.aether.dev/HTTPFilter caller-auth`, then `= shop/caller-auth
 * (AuthN, priority 0): lua (3 lines)` when resolved, or `unresolved (500):
 * not_found: …` when not, or `(resolved by the caller's cluster)` where
 * nobody resolved it (a registrar's view).
 */
export function describeExtensionRef(ref: ExtensionRef): string {
  const name = `${ref.group === "" ? "" : `${ref.group}/`}${ref.kind} ${ref.name}`;
  if (ref.httpFilter !== undefined) {
    return `${name} = ${httpFilterHeading(ref.httpFilter)}: ${describeExtension(ref.httpFilter)}`;
  }
  if (ref.unresolvedReason !== "") return `${name} unresolved (500): ${ref.unresolvedReason}`;
  return isHttpFilterRef(ref) ? `${name} (resolved by the caller's cluster)` : name;
}
