/**
 * The numbers of the fleet metrics (`aether_config_fleet_*`), from a fleet
 * view of every service and cluster: per cluster only (no per-service
 * label, whatever the number of services), and the fleet's largest skew.
 * Pure, no I/O.
 */
import { durationMs, timestampMs } from "@bufbuild/protobuf/wkt";
import type { FleetView } from "./fleet-aggregate.js";

/** One cluster's metrics. */
export interface FleetClusterMetrics {
  /** The cluster (the only label, with `state`). */
  readonly cluster: string;
  /** Whether every replica stopped reporting. */
  readonly stale: boolean;
  /** `behind_for`, in seconds. */
  readonly behindSeconds: number;
  /** Its services by state (stale ones are not counted: the cluster is). */
  readonly services: {
    readonly in_sync: number;
    readonly behind: number;
    readonly rejecting: number;
    readonly drifted: number;
  };
  /** Its agents by state, over its fresh replicas. */
  readonly agents: {
    readonly in_sync: number;
    readonly behind: number;
    readonly rejecting: number;
    readonly not_ready: number;
  };
  /** The rejection entries (import and agent) of its services. */
  readonly rejections: number;
  /** Its newest report, in seconds since the epoch; undefined when it has none. */
  readonly lastReportSeconds: number | undefined;
}

/** The fleet metrics. */
export interface FleetMetrics {
  /** One entry per cluster that publishes status, by name. */
  readonly clusters: readonly FleetClusterMetrics[];
  /** The largest skew of any service, in seconds (0 when all are in sync). */
  readonly maxSkewSeconds: number;
}

/** The metrics of `view`, which should be of every service and cluster (no filter, no limit). */
export function fleetMetrics(view: FleetView): FleetMetrics {
  const rejections = new Map<string, number>();
  let maxSkewSeconds = 0;
  for (const service of view.services) {
    maxSkewSeconds = Math.max(maxSkewSeconds, service.skewMs / 1000);
    for (const c of service.clusters) {
      const n = c.report.importRejections.length + c.report.agentRejections.length;
      if (n > 0) rejections.set(c.cluster, (rejections.get(c.cluster) ?? 0) + n);
    }
  }
  const clusters = view.clusters.map((c) => ({
    cluster: c.cluster,
    stale: c.stale,
    behindSeconds: c.behindFor === undefined ? 0 : durationMs(c.behindFor) / 1000,
    services: {
      in_sync: c.servicesInSync,
      behind: c.servicesBehind,
      rejecting: c.servicesRejecting,
      drifted: c.servicesDrifted,
    },
    agents: {
      in_sync: c.agents?.inSync ?? 0,
      behind: c.agents?.behind ?? 0,
      rejecting: c.agents?.rejecting ?? 0,
      not_ready: c.agents?.notReady ?? 0,
    },
    rejections: rejections.get(c.cluster) ?? 0,
    lastReportSeconds:
      c.lastReportTime === undefined ? undefined : timestampMs(c.lastReportTime) / 1000,
  }));
  return { clusters, maxSkewSeconds };
}
