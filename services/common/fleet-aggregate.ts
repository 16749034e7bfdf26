/**
 * The fleet view (GetFleetStatus): every cluster's published import status,
 * merged per cluster (`fleet-replicas.ts`, `fleet-cluster-merge.ts`), judged
 * per service against this registrar's current versions (`fleet-state.ts`,
 * `fleet-drift.ts`, `fleet-versions.ts`), filtered and sorted worst first.
 * Pure, no I/O, no timer: the time is an input.
 *
 * Two choices the contract leaves open: a service with a current version
 * that no selected cluster reports is BEHIND (nobody is known to serve it),
 * and a cluster filter leaves out services only unselected clusters report
 * (unless they have a current version). Drift is judged over every fresh
 * cluster, selected or not, so the baseline does not depend on the filter.
 */
import { create } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  type FleetCluster,
  type FleetService,
  type FleetServiceCluster,
  FleetServiceClusterSchema,
  FleetServiceSchema,
  FleetState,
  type GetFleetStatusResponse,
  GetFleetStatusResponseSchema,
} from "../../gen/aether/registry/v1/fleet_pb.js";
import { type ClusterReport, mergeCluster } from "./fleet-cluster-merge.js";
import { agentCounts, summarizeCluster, tallyClusters } from "./fleet-cluster-summary.js";
import { driftedClusters } from "./fleet-drift.js";
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

/** The fleet view before its limit: the selected clusters and every matching service, worst first. */
export interface FleetView {
  /** The selected clusters that publish status, by name. */
  readonly clusters: readonly FleetCluster[];
  /** Every matching service, worst first (state, then skew, then name). */
  readonly services: readonly FleetService[];
}

/** Computes the fleet view of `query` (its limit is applied by {@link fleetResponse}). */
export function computeFleetView(inputs: FleetInputs, query: FleetQuery): FleetView {
  const reports = groupReplicas(inputs.replicas, inputs.nowMs).map(mergeCluster);
  const selected = reports.filter(
    (r) => query.clusters === undefined || query.clusters.has(r.replicas.cluster),
  );
  const services: FleetService[] = [];
  for (const service of serviceUniverse(inputs.versions, selected, query)) {
    const judged = judgeService(service, inputs, reports, selected);
    if (query.states === undefined || query.states.has(judged.state)) services.push(judged);
  }
  services.sort(worstFirst);
  const tallies = tallyClusters(services, (s) => inputs.versions.get(s)?.current);
  const clusters = selected.map((r) =>
    summarizeCluster(r, tallies.get(r.replicas.cluster), inputs.nowMs),
  );
  return { clusters, services };
}

/** The response: `view` with at most `limit` services. */
export function fleetResponse(
  view: FleetView,
  limit: number,
  nowMs: number,
  synced: boolean,
): GetFleetStatusResponse {
  return create(GetFleetStatusResponseSchema, {
    time: timestampFromMs(nowMs),
    clusters: [...view.clusters],
    services: view.services.slice(0, limit),
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

function judgeService(
  service: string,
  inputs: FleetInputs,
  reports: readonly ClusterReport[],
  selected: readonly ClusterReport[],
): FleetService {
  const versions = inputs.versions.get(service);
  const current = versions?.current;
  const drifted = new Set(
    driftedClusters(
      reports.flatMap((r) => {
        const digest = r.services.get(service)?.localDigest;
        return r.replicas.stale || digest === undefined
          ? []
          : [{ cluster: r.replicas.cluster, digest }];
      }),
    ),
  );
  const clusters: FleetServiceCluster[] = [];
  for (const report of selected) {
    const entry = report.services.get(service);
    if (entry === undefined) continue;
    const cluster = report.replicas.cluster;
    const stale = report.replicas.stale;
    const servedMs = entry.served === undefined ? undefined : exportTimeMs(entry.served.version);
    clusters.push(
      create(FleetServiceClusterSchema, {
        cluster,
        state: clusterServiceState({
          stale,
          report: entry,
          current,
          drifted: drifted.has(cluster),
        }),
        originCluster: entry.served?.origin ?? "",
        version: entry.served?.version ?? "",
        agents: agentCounts(entry.agents),
        importRejections: [...entry.importRejections],
        agentRejections: [...entry.agentRejections],
        age:
          servedMs === undefined ? undefined : durationFromMs(Math.max(0, inputs.nowMs - servedMs)),
        versionsBehind: versionsBehind(entry.served, current, versions?.history ?? []),
        localDigest: entry.localDigest ?? "",
        stale,
      }),
    );
  }
  return create(FleetServiceSchema, {
    service,
    originCluster: current?.origin ?? "",
    version: current?.version ?? "",
    state:
      clusters.length === 0
        ? FleetState.BEHIND
        : clusters.reduce((worst, c) => worseState(worst, c.state), FleetState.IN_SYNC),
    clusters,
    ...skewOf(clusters, current),
    driftedClusters: clusters.filter((c) => drifted.has(c.cluster)).map((c) => c.cluster),
  });
}

/**
 * The skew over the fresh clusters: the most versions behind, and the
 * current version's export time minus the oldest served version's (zero
 * when every fresh cluster serves the current version, or there is none).
 */
function skewOf(
  clusters: readonly FleetServiceCluster[],
  current: FleetVersion | undefined,
): Pick<FleetService, "skewVersions" | "skew"> {
  const fresh = clusters.filter((c) => !c.stale);
  const skewVersions = Math.max(0, ...fresh.map((c) => c.versionsBehind));
  const currentMs = current === undefined ? undefined : exportTimeMs(current.version);
  let skewMs = 0;
  for (const c of fresh) {
    if (
      currentMs === undefined ||
      sameVersion({ origin: c.originCluster, version: c.version }, current)
    )
      continue;
    const servedMs = exportTimeMs(c.version);
    if (servedMs !== undefined) skewMs = Math.max(skewMs, currentMs - servedMs);
  }
  return { skewVersions, skew: durationFromMs(skewMs) };
}

function skewMsOf(service: FleetService): number {
  return service.skew === undefined
    ? 0
    : Number(service.skew.seconds) * 1000 + service.skew.nanos / 1e6;
}

/** Worst first: by severity, then the larger skew (time, then versions), then by name. */
function worstFirst(a: FleetService, b: FleetService): number {
  return (
    severityRank(a.state) - severityRank(b.state) ||
    skewMsOf(b) - skewMsOf(a) ||
    b.skewVersions - a.skewVersions ||
    (a.service < b.service ? -1 : a.service > b.service ? 1 : 0)
  );
}
