/** GetFleetStatus answers for the fleet view's tests. */
import { create } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  FleetState,
  type GetFleetStatusResponse,
  GetFleetStatusResponseSchema,
} from "../../../gen/aether/registry/v1/fleet_pb.js";

/** The answer's time: 2026-12-03T12:00:00Z. */
export const NOW_MS = Date.UTC(2026, 11, 3, 12, 0, 0);
/** The current version and an older one. */
export const V2 = "2026-12-03T11:59:00.123456789Z";
export const V1 = "2026-12-03T11:58:30.000000001Z";

/** An answer: hub and east fresh, west stale; shop/cart behind in east, web/frontend in sync. */
export function fleetAnswer(init: { matchingServices?: number } = {}): GetFleetStatusResponse {
  return create(GetFleetStatusResponseSchema, {
    time: timestampFromMs(NOW_MS),
    synced: true,
    matchingServices: 2,
    clusters: [
      {
        cluster: "east",
        lastReportTime: timestampFromMs(NOW_MS - 4_000),
        agents: { inSync: 1, behind: 1 },
        servicesInSync: 1,
        servicesBehind: 1,
      },
      { cluster: "hub", lastReportTime: timestampFromMs(NOW_MS - 1_000), servicesInSync: 2 },
      { cluster: "west", stale: true, lastReportTime: timestampFromMs(NOW_MS - 125_000) },
    ],
    services: [
      {
        service: "shop/cart",
        originCluster: "hub",
        version: V2,
        state: FleetState.REJECTING,
        skewVersions: 1,
        skew: durationFromMs(30_123),
        clusters: [
          {
            cluster: "east",
            state: FleetState.REJECTING,
            originCluster: "hub",
            version: V1,
            versionsBehind: 1,
            agents: { inSync: 1, rejecting: 1 },
            agentRejections: [
              {
                agents: 1,
                rejection: { originCluster: "hub", version: V2, reason: "bad_signature" },
              },
            ],
          },
          { cluster: "hub", state: FleetState.IN_SYNC, originCluster: "hub", version: V2 },
        ],
      },
      {
        service: "web/frontend",
        originCluster: "hub",
        version: V2,
        state: FleetState.IN_SYNC,
        clusters: [
          { cluster: "east", state: FleetState.IN_SYNC, originCluster: "hub", version: V2 },
          { cluster: "hub", state: FleetState.IN_SYNC, originCluster: "hub", version: V2 },
        ],
      },
    ],
    ...init,
  });
}
