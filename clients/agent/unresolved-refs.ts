/**
 * The route table's unresolved HTTPFilter references: ExtensionRef filters
 * naming an HTTPFilter (`mesh.aether.dev`) that this cluster has no valid
 * one of (see `services/common/extension-ref-resolve.ts`). The data plane
 * answers the requests that would run them with 500; the agent counts them
 * by reason (`/metrics`) and warns once about each new one.
 */
import { extensionRefOutcomes } from "../../services/common/extension-ref-resolve.js";
import type { RouteTable, RouteTableEntry } from "../../services/common/route-merge.js";
import type { Logger } from "../../services/runtime/logger.js";
import { createRateLimitedLog } from "../../services/runtime/rate-limited-log.js";

/** One unresolved reference of a route table. */
export interface UnresolvedRef {
  /** The service whose entry holds it. */
  readonly service: string;
  /** The route, `Kind namespace/name`. */
  readonly route: string;
  /** The HTTPFilter named, `namespace/name`. */
  readonly filter: string;
  /** `not_found` or `invalid_filter`. */
  readonly reason: string;
  /** The unresolved reason's whole text. */
  readonly detail: string;
}

/** Every unresolved HTTPFilter reference of `table`, in service and route order. Pure. */
export function unresolvedRefs(table: RouteTable | undefined): UnresolvedRef[] {
  return (table?.services ?? []).flatMap(entryRefs);
}

/** Each entry's unresolved references, found once per entry object (entries are immutable). */
const refsOfEntry = new WeakMap<RouteTableEntry, UnresolvedRef[]>();

function entryRefs(entry: RouteTableEntry): UnresolvedRef[] {
  let refs = refsOfEntry.get(entry);
  if (refs === undefined) {
    refs = extensionRefOutcomes(entry.projection).flatMap((o) =>
      o.reason === undefined
        ? []
        : [
            {
              service: entry.service,
              route: o.route,
              filter: o.filter,
              reason: o.reason,
              detail: o.detail,
            },
          ],
    );
    refsOfEntry.set(entry, refs);
  }
  return refs;
}

/** The unresolved references counted by reason. Pure. */
export function countByReason(refs: readonly UnresolvedRef[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { reason } of refs) counts.set(reason, (counts.get(reason) ?? 0) + 1);
  return counts;
}

function describe(ref: UnresolvedRef): string {
  return `${ref.service}: ${ref.route}: ${ref.detail}`;
}

/**
 * A listener for new route tables that warns (rate-limited) about each
 * unresolved reference the previous table did not have.
 */
export function createUnresolvedRefLog(logger: Logger): (table: RouteTable) => void {
  const log = createRateLimitedLog(logger);
  let previous = new Set<string>();
  return (table) => {
    const refs = unresolvedRefs(table);
    for (const ref of refs) {
      const text = describe(ref);
      if (previous.has(text)) continue;
      log.warn(
        "unresolved-extension-ref",
        { reason: ref.reason, service: ref.service, filter: ref.filter },
        `unresolved ExtensionRef filter (requests it handles get 500): ${text}`,
      );
    }
    previous = new Set(refs.map(describe));
  };
}
