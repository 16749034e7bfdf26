/**
 * The condition that summarises the fleet on an exported route's parent
 * entry (issue 16: "feedback reaches the author"): how many clusters serve
 * the Service's current version, and which reject it, are behind, stopped
 * reporting or run different local config. Implementation-specific, so its
 * type is domain-prefixed as the Gateway API asks. Pure, no I/O.
 */
import type { WantedCondition } from "./status-merge.js";

/** The condition type, beside `Accepted` and `ResolvedRefs`. */
export const FLEET_CONDITION_TYPE = "mesh.aether.dev/FleetInSync";

/** The state of the Service in one cluster (FleetState of the contract, lowercase). */
export type FleetClusterState = "in_sync" | "behind" | "rejecting" | "drifted" | "stale";

/** One cluster's part of a {@link FleetSummary}. */
export interface FleetClusterSummary {
  /** The cluster. */
  readonly cluster: string;
  /** Its state for the Service. */
  readonly state: FleetClusterState;
  /** The version it serves; empty when none. */
  readonly version: string;
  /** Why it rejects, as machine-readable reasons (rejecting only). */
  readonly reasons: readonly string[];
}

/** The fleet's view of one Service, as the condition is written from. */
export interface FleetSummary {
  /** The Service's current version (the origin's export). */
  readonly version: string;
  /** Every cluster that reports the Service, by name. */
  readonly clusters: readonly FleetClusterSummary[];
}

/** The most cluster names one part of the message lists before "and N more". */
const MAX_NAMED = 5;

/**
 * The condition for Service `service` given its fleet summary (undefined:
 * no cluster reports it yet). Its reason, by priority: `Rejected` (False),
 * `Propagating` (False: some cluster serves an older version or has agents
 * behind), `ClustersStale` (Unknown: the rest are in sync but some stopped
 * reporting), `InSync` (True; drifted clusters serve the current version and
 * are named in the message), `Pending` (Unknown: no report yet). The message
 * counts the clusters that serve the current version and names the others.
 */
export function fleetCondition(
  service: string,
  summary: FleetSummary | undefined,
): WantedCondition {
  if (summary === undefined || summary.clusters.length === 0) {
    return {
      type: FLEET_CONDITION_TYPE,
      status: "Unknown",
      reason: "Pending",
      message: `no cluster reports Service ${service} yet`,
    };
  }
  const { clusters, version } = summary;
  const named = (state: FleetClusterState) => clusters.filter((c) => c.state === state);
  const rejecting = named("rejecting");
  const behind = named("behind");
  const stale = named("stale");
  const drifted = named("drifted");
  const serving = clusters.filter((c) => c.state !== "stale" && c.version === version).length;
  const parts = [servingPart(clusters, serving, version)];
  if (rejecting.length > 0) {
    parts.push(
      `rejected by ${list(rejecting.map((c) => `${c.cluster} (${c.reasons.join(", ")})`))}`,
    );
  }
  if (behind.length > 0) parts.push(`behind: ${list(behind.map((c) => c.cluster))}`);
  if (stale.length > 0) parts.push(`not reporting: ${list(stale.map((c) => c.cluster))}`);
  if (drifted.length > 0) {
    parts.push(`local config differs in: ${list(drifted.map((c) => c.cluster))}`);
  }
  const message = parts.join("; ");
  if (rejecting.length > 0)
    return { type: FLEET_CONDITION_TYPE, status: "False", reason: "Rejected", message };
  if (behind.length > 0) {
    return { type: FLEET_CONDITION_TYPE, status: "False", reason: "Propagating", message };
  }
  if (stale.length > 0) {
    return { type: FLEET_CONDITION_TYPE, status: "Unknown", reason: "ClustersStale", message };
  }
  return { type: FLEET_CONDITION_TYPE, status: "True", reason: "InSync", message };
}

/** How many of the clusters serve `version`: `all 3 clusters serve …`, `1 of 2 …`, `east serves …`. */
function servingPart(
  clusters: readonly FleetClusterSummary[],
  serving: number,
  version: string,
): string {
  const [only] = clusters;
  if (clusters.length === 1 && only !== undefined) {
    return `${only.cluster} ${serving === 1 ? "serves" : "does not serve"} version ${version}`;
  }
  if (serving === clusters.length)
    return `all ${clusters.length} clusters serve version ${version}`;
  return `${serving} of ${clusters.length} clusters serve version ${version}`;
}

/** `a, b, c`, or the first {@link MAX_NAMED} and `and N more`. */
function list(names: readonly string[]): string {
  if (names.length <= MAX_NAMED) return names.join(", ");
  return `${names.slice(0, MAX_NAMED).join(", ")} and ${names.length - MAX_NAMED} more`;
}
