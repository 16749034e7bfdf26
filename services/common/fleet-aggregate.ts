/**
 * The fleet view (GetFleetStatus): every cluster's published import status,
 * merged per cluster (`fleet-replicas.ts`, `fleet-cluster-merge.ts`), judged
 * per service against this registrar's current versions (`fleet-state.ts`,
 * `fleet-drift.ts`, `fleet-versions.ts`), filtered and sorted worst first.
 * Pure, no I/O, no timer: the time is an input. Services are judged into
 * plain objects; only those a response returns become messages
 * (`fleet-messages.ts`), so a view of every service (the metrics') stays
 * cheap.
 *
 * Two choices the contract leaves open: a service with a current version
 * that no selected cluster reports is BEHIND (nobody is known to serve it),
 * and a cluster filter leaves out services only unselected clusters report
 * (unless they have a current version). Drift is judged over every fresh
 * cluster, selected or not, so the baseline does not depend on the filter.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  type FleetCluster,
  FleetState,
  type GetFleetStatusResponse,
  GetFleetStatusResponseSchema,
} from "../../gen/aether/registry/v1/fleet_pb.js";
import { type ClusterReport, mergeCluster, type ServiceReport } from "./fleet-cluster-merge.js";
import { summarizeCluster, tallyClusters } from "./fleet-cluster-summary.js";
import { driftedClusters } from "./fleet-drift.js";
import { serviceMessage } from "./fleet-messages.js";
import { type FleetReplicaInput, groupReplicas } from "./fleet-replicas.js";
import type { FleetQuery } from "./fleet-request.js";
import { clusterServiceState, severityRank, worseState } from "./fleet-state.js";
import { exportTimeMs, type FleetVersion, sameVersion, versionsBehind } from "./fleet-versions.js";

/** This registrar's current version of a service and the versions it saw win, newest first. */
export interface ServiceVersions {
  /** The import policy's winner now. */
  readonly current: FleetVersion;
  /** The versions it saw current, newest first, at most 16 (see `fleet-versions.ts`). */
  readonly history: readonly FleetVersion[];
}

/** What the fleet view is computed from. */
export interface FleetInputs {
  /** Every cluster's published replicas. */
  readonly replicas: Iterable<FleetReplicaInput>;
  /** The time, in milliseconds since the epoch. */
  readonly nowMs: number;
  /** This registrar's current version and history per service (services without a winner absent). */
  readonly versions: ReadonlyMap<string, ServiceVersions>;
}

/** One service in one cluster, judged. */
export interface JudgedCluster {
  /** The cluster. */
  readonly cluster: string;
  /** Whether the cluster is stale (the report is its last). */
  readonly stale: boolean;
  /** Its state for the service. */
  readonly state: FleetState;
  /** Its merged report of the service. */
  readonly report: ServiceReport;
  /** The export time of the version it serves (ms); undefined when none (or unparseable). */
  readonly servedMs: number | undefined;
  /** How many versions behind the current one it is. */
  readonly versionsBehind: number;
}

/** One service across the fleet, judged. */
export interface JudgedService {
  /** The service. */
  readonly service: string;
  /** This registrar's current version; undefined when none. */
  readonly current: FleetVersion | undefined;
  /** The worst state over its clusters. */
  readonly state: FleetState;
  /** One entry per selected cluster that reports it, by cluster. */
  readonly clusters: readonly JudgedCluster[];
  /** The most versions a fresh cluster is behind. */
  readonly skewVersions: number;
  /** The current version's export time minus the oldest served one's, over fresh clusters (ms). */
  readonly skewMs: number;
  /** The selected clusters whose local config differs from most clusters'. */
  readonly drifted: readonly string[];
}

/** The fleet view before its limit: the selected clusters and every matching service, worst first. */
export interface FleetView {
  /** The selected clusters that publish status, by name. */
  readonly clusters: readonly FleetCluster[];
  /** Every matching service, worst first (state, then skew, then name). */
  readonly services: readonly JudgedService[];
}

/** Computes the fleet view of `query` (its limit is applied by {@link fleetResponse}). */
export function computeFleetView(inputs: FleetInputs, query: FleetQuery): FleetView {
  const reports = groupReplicas(inputs.replicas, inputs.nowMs).map(mergeCluster);
  const selected = reports.filter(
    (r) => query.clusters === undefined || query.clusters.has(r.replicas.cluster),
  );
  const services: JudgedService[] = [];
  for (const service of serviceUniverse(inputs.versions, selected, query)) {
    const judged = judgeService(service, inputs.versions.get(service), reports, selected);
    if (query.states === undefined || query.states.has(judged.state)) services.push(judged);
  }
  services.sort(worstFirst);
  const tallies = tallyClusters(services);
  const clusters = selected.map((r) =>
    summarizeCluster(r, tallies.get(r.replicas.cluster), inputs.nowMs),
  );
  return { clusters, services };
}

/** The response: `view` with at most `limit` services, ages taken at `nowMs`. */
export function fleetResponse(
  view: FleetView,
  limit: number,
  nowMs: number,
  synced: boolean,
): GetFleetStatusResponse {
  return create(GetFleetStatusResponseSchema, {
    time: timestampFromMs(nowMs),
    clusters: [...view.clusters],
    services: view.services.slice(0, limit).map((s) => serviceMessage(s, nowMs)),
    matchingServices: view.services.length,
    synced,
  });
}

function serviceUniverse(
  versions: ReadonlyMap<string, ServiceVersions>,
  selected: readonly ClusterReport[],
  query: FleetQuery,
): Set<string> {
  const all = new Set(versions.keys());
  for (const report of selected) for (const service of report.services.keys()) all.add(service);
  if (query.services === undefined) return all;
  return new Set([...all].filter((s) => query.services?.has(s)));
}

/** The drifted clusters of a service, judged over every fresh cluster that reads a local source. */
function driftOf(service: string, reports: readonly ClusterReport[]): Set<string> {
  const digests: { cluster: string; digest: string }[] = [];
  for (const r of reports) {
    const digest = r.services.get(service)?.localDigest;
    if (!r.replicas.stale && digest !== undefined)
      digests.push({ cluster: r.replicas.cluster, digest });
  }
  return new Set(driftedClusters(digests));
}

function judgeService(
  service: string,
  versions: ServiceVersions | undefined,
  reports: readonly ClusterReport[],
  selected: readonly ClusterReport[],
): JudgedService {
  const current = versions?.current;
  const drifted = driftOf(service, reports);
  const clusters: JudgedCluster[] = [];
  for (const r of selected) {
    const report = r.services.get(service);
    if (report === undefined) continue;
    const { cluster, stale } = r.replicas;
    clusters.push({
      cluster,
      stale,
      state: clusterServiceState({ stale, report, current, drifted: drifted.has(cluster) }),
      report,
      servedMs: report.served === undefined ? undefined : exportTimeMs(report.served.version),
      versionsBehind: versionsBehind(report.served, current, versions?.history ?? []),
    });
  }
  return {
    service,
    current,
    state:
      clusters.length === 0
        ? FleetState.BEHIND
        : clusters.reduce<FleetState>((worst, c) => worseState(worst, c.state), FleetState.IN_SYNC),
    clusters,
    ...skewOf(clusters, current),
    drifted: clusters.filter((c) => drifted.has(c.cluster)).map((c) => c.cluster),
  };
}

/**
 * The skew over the fresh clusters: the most versions behind, and the
 * current version's export time minus the oldest served version's (zero
 * when every fresh cluster serves the current version, or there is none).
 */
function skewOf(
  clusters: readonly JudgedCluster[],
  current: FleetVersion | undefined,
): { skewVersions: number; skewMs: number } {
  const currentMs = current === undefined ? undefined : exportTimeMs(current.version);
  let skewVersions = 0;
  let skewMs = 0;
  for (const c of clusters) {
    if (c.stale) continue;
    skewVersions = Math.max(skewVersions, c.versionsBehind);
    if (currentMs === undefined || c.servedMs === undefined) continue;
    if (!sameVersion(c.report.served, current)) skewMs = Math.max(skewMs, currentMs - c.servedMs);
  }
  return { skewVersions, skewMs };
}

/** Worst first: by severity, then the larger skew (time, then versions), then by name. */
function worstFirst(a: JudgedService, b: JudgedService): number {
  return (
    severityRank(a.state) - severityRank(b.state) ||
    b.skewMs - a.skewMs ||
    b.skewVersions - a.skewVersions ||
    (a.service < b.service ? -1 : a.service > b.service ? 1 : 0)
  );
}
