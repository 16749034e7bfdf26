/**
 * The fleet condition's input (`fleet-condition.ts`) from the fleet view's
 * answer for one Service (`FleetService` of the contract): each cluster's
 * state, served version and, when it rejects, the distinct reasons of its
 * registrar's and its agents' rejections. Pure.
 */
import { type FleetService, FleetState } from "../../gen/aether/registry/v1/fleet_pb.js";
import type { FleetClusterState, FleetSummary } from "./fleet-condition.js";

const STATES: ReadonlyMap<FleetState, FleetClusterState> = new Map([
  [FleetState.IN_SYNC, "in_sync"],
  [FleetState.BEHIND, "behind"],
  [FleetState.REJECTING, "rejecting"],
  [FleetState.DRIFTED, "drifted"],
  [FleetState.STALE, "stale"],
]);

/**
 * The summary of `service` for the fleet condition: its clusters in the
 * order given, an unspecified state read as behind (never as in sync).
 */
export function fleetSummaryOf(service: FleetService): FleetSummary {
  return {
    version: service.version,
    clusters: service.clusters.map((entry) => {
      const state = STATES.get(entry.state) ?? "behind";
      const reasons =
        state === "rejecting"
          ? [
              ...new Set([
                ...entry.importRejections.map((r) => r.reason),
                ...entry.agentRejections.map((r) => r.rejection?.reason ?? ""),
              ]),
            ].filter((r) => r !== "")
          : [];
      return { cluster: entry.cluster, state, version: entry.version, reasons };
    }),
  };
}
