/**
 * The fleet view's cluster summaries (`FleetCluster`): each selected
 * cluster's services by state over the matching services, its agents and
 * how long it has been behind, tallied in one pass over the judged
 * services. Pure, no I/O.
 */
import { create } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  AgentCountsSchema,
  type FleetCluster,
  FleetClusterSchema,
  FleetState,
} from "../../gen/aether/registry/v1/fleet_pb.js";
import type { JudgedService } from "./fleet-aggregate.js";
import type { AgentTotals, ClusterReport } from "./fleet-cluster-merge.js";
import { exportTimeMs, sameVersion } from "./fleet-versions.js";

/** Agent totals as the contract's `AgentCounts`. */
export function agentCounts(agents: AgentTotals) {
  return create(AgentCountsSchema, {
    inSync: agents.inSync,
    behind: agents.behind,
    rejecting: agents.rejecting,
    notReady: agents.notReady,
  });
}

/** One cluster's tally over the matching services. */
export interface ClusterTally {
  /** Its services by state. */
  readonly counts: Map<FleetState, number>;
  /** The export time of the oldest current version it lags behind (ms); undefined when none. */
  oldestBehindMs: number | undefined;
}

/**
 * Each cluster's services by state, and the oldest current version it lags
 * behind: it does not serve it yet, or some agents applied an older one
 * (stale clusters lag behind nothing: they are stale). One pass.
 */
export function tallyClusters(services: readonly JudgedService[]): Map<string, ClusterTally> {
  const tallies = new Map<string, ClusterTally>();
  for (const service of services) {
    const current = service.current;
    const currentMs = current === undefined ? undefined : exportTimeMs(current.version);
    for (const entry of service.clusters) {
      let tally = tallies.get(entry.cluster);
      if (tally === undefined) {
        tally = { counts: new Map(), oldestBehindMs: undefined };
        tallies.set(entry.cluster, tally);
      }
      tally.counts.set(entry.state, (tally.counts.get(entry.state) ?? 0) + 1);
      const lags =
        !entry.stale &&
        currentMs !== undefined &&
        (!sameVersion(entry.report.served, current) || entry.report.agents.behind > 0);
      if (lags && (tally.oldestBehindMs === undefined || currentMs < tally.oldestBehindMs)) {
        tally.oldestBehindMs = currentMs;
      }
    }
  }
  return tallies;
}

/**
 * One cluster's summary: its services by state over the matching services,
 * and how long it has been behind (now minus the export time of the oldest
 * current version it lags behind; zero when none).
 */
export function summarizeCluster(
  report: ClusterReport,
  tally: ClusterTally | undefined,
  nowMs: number,
): FleetCluster {
  const { cluster, stale, lastReportMs } = report.replicas;
  const count = (state: FleetState) => tally?.counts.get(state) ?? 0;
  const oldest = tally?.oldestBehindMs;
  return create(FleetClusterSchema, {
    cluster,
    stale,
    lastReportTime: lastReportMs === undefined ? undefined : timestampFromMs(lastReportMs),
    replicas: report.replicas.all.length,
    agents: agentCounts(report.agents),
    servicesInSync: count(FleetState.IN_SYNC),
    servicesBehind: count(FleetState.BEHIND),
    servicesRejecting: count(FleetState.REJECTING),
    servicesDrifted: count(FleetState.DRIFTED),
    behindFor: durationFromMs(oldest === undefined ? 0 : Math.max(0, nowMs - oldest)),
    localSource: report.localSource,
  });
}
