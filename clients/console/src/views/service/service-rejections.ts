/**
 * Where a service's projections are refused and why, gathered for the
 * Service view from GetFleetStatus (per cluster: its registrar's import
 * rejections and its agents' rejection summaries) and from this registrar's
 * GetConfigStatus (its import rejections and origin conflicts of the
 * service). Pure.
 */
import type { GetConfigStatusResponse } from "../../../../../gen/aether/registry/v1/config_service_pb.js";
import type { GetFleetStatusResponse } from "../../../../../gen/aether/registry/v1/fleet_pb.js";

/** One refusal (or conflict) of a projection of the service. */
export interface RejectionRow {
  /** Who refused it: `registrar of east`, `3 agents in east`, `this registrar`. */
  readonly where: string;
  /** The refused projection's origin. */
  readonly origin: string;
  /** The refused version (empty when the source does not say). */
  readonly version: string;
  /** The machine-readable reason (`untrusted_origin`, `bad_signature`, `conflict`). */
  readonly reason: string;
  /** The sentence for operators. */
  readonly message: string;
}

/**
 * The rows for `service`: this registrar's import rejections and
 * conflicts first, then each cluster's (by cluster name) import rejections
 * (except this registrar's cluster's, already listed) and agent rejections
 * from the fleet status. Either source may be missing
 * (not answered yet, or failed).
 */
export function gatherRejections(
  service: string,
  status: GetConfigStatusResponse | undefined,
  fleet: GetFleetStatusResponse | undefined,
): RejectionRow[] {
  const rows: RejectionRow[] = [];
  const here = status === undefined ? "" : status.cluster;
  const self = here === "" ? "this registrar" : `registrar of ${here} (this one)`;
  for (const r of status?.rejections ?? []) {
    if (r.service !== service) continue;
    rows.push({
      where: self,
      origin: r.originCluster,
      version: "",
      reason: r.reason,
      message: r.message,
    });
  }
  for (const c of status?.conflicts ?? []) {
    if (c.service !== service) continue;
    rows.push({
      where: self,
      origin: c.loserOrigins.join(", "),
      version: "",
      reason: "conflict",
      message: `also exported by ${c.loserOrigins.join(", ")}; ${c.winnerOrigin} wins with ${c.winnerVersion}`,
    });
  }
  const entry = fleet?.services.find((s) => s.service === service);
  const clusters = [...(entry?.clusters ?? [])].sort((a, b) => a.cluster.localeCompare(b.cluster));
  for (const cluster of clusters) {
    // This registrar's own cluster: its import rejections are listed above already.
    const imports = cluster.cluster === here ? [] : cluster.importRejections;
    for (const r of imports) {
      rows.push({
        where: `registrar of ${cluster.cluster}`,
        origin: r.originCluster,
        version: r.version,
        reason: r.reason,
        message: r.message,
      });
    }
    for (const summary of cluster.agentRejections) {
      const r = summary.rejection;
      if (r === undefined) continue;
      const agents = `${summary.agents} ${summary.agents === 1 ? "agent" : "agents"} in ${cluster.cluster}`;
      rows.push({
        where: agents,
        origin: r.originCluster,
        version: r.version,
        reason: r.reason,
        message: r.message,
      });
    }
  }
  return rows;
}
