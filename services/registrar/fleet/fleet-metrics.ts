/**
 * The fleet gauges (`aether_config_fleet_*`), computed when scraped from the
 * fleet view's numbers (`services/common/fleet-metrics-snapshot.ts`). Their
 * labels are `cluster` and a fixed `state` only, never a service, so their
 * cardinality is bounded by the clusters however many services there are.
 * Every gauge is reset before it is filled, so a cluster that disappears
 * from the feed disappears from the gauges; while the feed is not synced
 * they are empty. The alert rules in deploy/monitoring/ use these names.
 */
import { Gauge, type Registry } from "prom-client";
import type { FleetClusterMetrics, FleetMetrics } from "../../common/fleet-metrics-snapshot.js";

/** The label values of `state` on the service gauge. */
const SERVICE_STATES = ["in_sync", "behind", "rejecting", "drifted"] as const;
/** The label values of `state` on the agent gauge. */
const AGENT_STATES = ["in_sync", "behind", "rejecting", "not_ready"] as const;

/** One gauge: its name, help, labels and the values per cluster. */
interface FleetGauge {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly values: (cluster: FleetClusterMetrics) => [Record<string, string>, number][];
}

const PER_CLUSTER: readonly FleetGauge[] = [
  {
    name: "aether_config_fleet_cluster_stale",
    help: "1 when every registrar replica of the cluster stopped publishing its import status (three heartbeats), else 0.",
    labelNames: ["cluster"],
    values: (c) => [[{ cluster: c.cluster }, c.stale ? 1 : 0]],
  },
  {
    name: "aether_config_fleet_cluster_behind_seconds",
    help: "How long the cluster has been behind: now minus the export time of the oldest current version it does not serve yet (or whose agents lag); 0 when none.",
    labelNames: ["cluster"],
    values: (c) => [[{ cluster: c.cluster }, c.behindSeconds]],
  },
  {
    name: "aether_config_fleet_cluster_services",
    help: "The cluster's services by state (in_sync, behind, rejecting, drifted); a stale cluster's are not counted.",
    labelNames: ["cluster", "state"],
    values: (c) =>
      SERVICE_STATES.map((state) => [{ cluster: c.cluster, state }, c.services[state]]),
  },
  {
    name: "aether_config_fleet_cluster_agents",
    help: "The cluster's reporting agents by state (in_sync, behind, rejecting, not_ready), over its fresh replicas.",
    labelNames: ["cluster", "state"],
    values: (c) => AGENT_STATES.map((state) => [{ cluster: c.cluster, state }, c.agents[state]]),
  },
  {
    name: "aether_config_fleet_cluster_rejections",
    help: "Rejection entries (import and agent) of the cluster's services.",
    labelNames: ["cluster"],
    values: (c) => [[{ cluster: c.cluster }, c.rejections]],
  },
  {
    name: "aether_config_fleet_cluster_last_report_timestamp_seconds",
    help: "When the cluster last published its import status (the newest replica header), in seconds since the epoch.",
    labelNames: ["cluster"],
    values: (c) =>
      c.lastReportSeconds === undefined ? [] : [[{ cluster: c.cluster }, c.lastReportSeconds]],
  },
];

/**
 * Registers the fleet gauges in `registry`; `source` gives the numbers at
 * scrape time (undefined: no fleet view yet, the gauges are empty).
 */
export function registerFleetMetrics(
  registry: Registry,
  source: () => FleetMetrics | undefined,
): void {
  for (const gauge of PER_CLUSTER) {
    new Gauge({
      name: gauge.name,
      help: gauge.help,
      labelNames: gauge.labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const cluster of source()?.clusters ?? []) {
          for (const [labels, value] of gauge.values(cluster)) this.set(labels, value);
        }
      },
    });
  }
  new Gauge({
    name: "aether_config_fleet_max_skew_seconds",
    help: "The largest skew of any service across the fleet: its current version's export time minus the oldest version a fresh cluster serves; 0 when all are in sync.",
    registers: [registry],
    collect() {
      this.reset();
      const metrics = source();
      if (metrics !== undefined) this.set(metrics.maxSkewSeconds);
    },
  });
}
