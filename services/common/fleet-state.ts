/**
 * The state of a service in one cluster, and the severity order the fleet
 * view sorts and summarizes by. Pure, no I/O.
 */
import { FleetState } from "../../gen/aether/registry/v1/fleet_pb.js";
import type { ServiceReport } from "./fleet-cluster-merge.js";
import { type FleetVersion, sameVersion } from "./fleet-versions.js";

/**
 * Severity, worst first: STALE (nothing the cluster says can be trusted as
 * current, so it may hide anything below), REJECTING, BEHIND, DRIFTED,
 * IN_SYNC. UNSPECIFIED never describes a service.
 */
export const FLEET_SEVERITY: readonly FleetState[] = [
  FleetState.STALE,
  FleetState.REJECTING,
  FleetState.BEHIND,
  FleetState.DRIFTED,
  FleetState.IN_SYNC,
];

/** The rank of a state in {@link FLEET_SEVERITY}: 0 is the worst; UNSPECIFIED ranks last. */
export function severityRank(state: FleetState): number {
  const rank = FLEET_SEVERITY.indexOf(state);
  return rank < 0 ? FLEET_SEVERITY.length : rank;
}

/** The worse of two states. */
export function worseState(a: FleetState, b: FleetState): FleetState {
  return severityRank(b) < severityRank(a) ? b : a;
}

/** What a cluster's state for a service is judged from. */
export interface StateInputs {
  /** Whether the cluster is stale. */
  readonly stale: boolean;
  /** Its merged report of the service. */
  readonly report: ServiceReport;
  /** The answering registrar's current version; undefined when it has none. */
  readonly current: FleetVersion | undefined;
  /** Whether its local config digest differs from the fleet's baseline. */
  readonly drifted: boolean;
}

/**
 * A cluster's state for a service: STALE when the cluster is; else
 * REJECTING when an import or agent rejection names the current version, or
 * agents reject what it serves; else BEHIND when it does not serve the
 * current version (there is one) or agents applied an older one; else
 * DRIFTED when its local config differs; else IN_SYNC.
 */
export function clusterServiceState(inputs: StateInputs): FleetState {
  const { report, current } = inputs;
  if (inputs.stale) return FleetState.STALE;
  const refusesCurrent = (r: { originCluster: string; version: string } | undefined) =>
    r !== undefined &&
    current !== undefined &&
    sameVersion({ origin: r.originCluster, version: r.version }, current);
  if (
    report.agents.rejecting > 0 ||
    report.importRejections.some(refusesCurrent) ||
    report.agentRejections.some((s) => refusesCurrent(s.rejection))
  ) {
    return FleetState.REJECTING;
  }
  if ((current !== undefined && !sameVersion(report.served, current)) || report.agents.behind > 0) {
    return FleetState.BEHIND;
  }
  return inputs.drifted ? FleetState.DRIFTED : FleetState.IN_SYNC;
}
