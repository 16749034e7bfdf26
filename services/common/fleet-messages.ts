/**
 * A judged service (`fleet-aggregate.ts`) as the contract's `FleetService`
 * message, ages taken at `nowMs`. Only the services a response returns are
 * converted. Pure, no I/O.
 */
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import {
  type FleetService,
  FleetServiceClusterSchema,
  FleetServiceSchema,
} from "../../gen/aether/registry/v1/fleet_pb.js";
import type { JudgedService } from "./fleet-aggregate.js";
import { agentCounts } from "./fleet-cluster-summary.js";

/** The `FleetService` message of a judged service. */
export function serviceMessage(s: JudgedService, nowMs: number): FleetService {
  return create(FleetServiceSchema, {
    service: s.service,
    originCluster: s.current?.origin ?? "",
    version: s.current?.version ?? "",
    state: s.state,
    clusters: s.clusters.map((c) =>
      create(FleetServiceClusterSchema, {
        cluster: c.cluster,
        state: c.state,
        originCluster: c.report.served?.origin ?? "",
        version: c.report.served?.version ?? "",
        agents: agentCounts(c.report.agents),
        importRejections: [...c.report.importRejections],
        agentRejections: [...c.report.agentRejections],
        age: c.servedMs === undefined ? undefined : durationFromMs(Math.max(0, nowMs - c.servedMs)),
        versionsBehind: c.versionsBehind,
        localDigest: c.report.localDigest ?? "",
        stale: c.stale,
      }),
    ),
    skewVersions: s.skewVersions,
    skew: durationFromMs(s.skewMs),
    driftedClusters: [...s.drifted],
  });
}
