/**
 * The fleet view's model: a GetFleetStatus answer (or the fallback's
 * equivalent, `fleet-fallback.ts`) and the filters as the grid shows it:
 * columns are the clusters (stale ones marked), rows the services worst
 * first (the answer's order), each cell the version served in short form
 * with its state, agents and rejections, each row its origin, current
 * version and skew, and one summary per cluster. Pure: every age is taken
 * against the answer's own `time`.
 */
import { durationMs, timestampMs } from "@bufbuild/protobuf/wkt";
import type {
  AgentCounts,
  FleetCluster,
  FleetService,
  FleetServiceCluster,
  GetFleetStatusResponse,
  RejectedProjection,
} from "../../../../../gen/aether/registry/v1/fleet_pb.js";
import { type FleetFilters, serviceMatches } from "./fleet-filters.js";
import { type CellState, cellState, formatSpan, shortVersion } from "./fleet-format.js";

/** One cluster's column. */
export interface FleetColumn {
  readonly cluster: string;
  /** Every replica of the cluster stopped reporting. */
  readonly stale: boolean;
}

/** One service in one cluster. */
export interface FleetCell {
  readonly cluster: string;
  /** Undefined when the cluster does not report the service. */
  readonly state: CellState | undefined;
  /** The version served, in short form (`—` for none). */
  readonly short: string;
  /** The full version served; empty for none. */
  readonly version: string;
  /** Its agents as `in sync/all` (`2/3`); empty when none reports. */
  readonly agents: string;
  /** One line per import or agent rejection. */
  readonly rejections: readonly string[];
  /** The cell's tooltip: full version, origin, agents, rejections. */
  readonly title: string;
}

/** One service's row. */
export interface FleetRow {
  /** `namespace/name` (or `@mesh`). */
  readonly service: string;
  /** Its worst state; undefined when no cluster reports it. */
  readonly state: CellState | undefined;
  /** The origin of its current projection; empty for none. */
  readonly origin: string;
  /** The current version (full) and its short form. */
  readonly version: string;
  readonly short: string;
  /** The skew: `2v 1m 3s`, `1v`, or `—` when every cluster serves the current version. */
  readonly skew: string;
  /** One cell per column, in the columns' order. */
  readonly cells: readonly FleetCell[];
}

/** One cluster's summary line. */
export interface ClusterSummary {
  readonly cluster: string;
  readonly stale: boolean;
  /** Services by state among the selected ones. */
  readonly services: Readonly<Record<"in-sync" | "behind" | "rejecting" | "drifted", number>>;
  /** Its agents: `3 in sync, 1 behind` (`no agents` when none). */
  readonly agents: string;
  /** The age of its newest report: `4s ago`, or `never`. */
  readonly lastReport: string;
}

/** The grid, its summaries and the counts. */
export interface FleetModel {
  readonly columns: readonly FleetColumn[];
  readonly rows: readonly FleetRow[];
  readonly summaries: readonly ClusterSummary[];
  /** How many services matched the server's filters (before its limit). */
  readonly matching: number;
  /** How many the server sent (after its limit). */
  readonly received: number;
  /** Whether the answering registrar's view of the store is synced. */
  readonly synced: boolean;
}

function agentsText(a: AgentCounts | undefined): string {
  const parts = (
    [
      ["in sync", a?.inSync ?? 0],
      ["behind", a?.behind ?? 0],
      ["rejecting", a?.rejecting ?? 0],
      ["not ready", a?.notReady ?? 0],
    ] as const
  )
    .filter(([, n]) => n > 0)
    .map(([label, n]) => `${n} ${label}`);
  return parts.length === 0 ? "no agents" : parts.join(", ");
}

function rejectionText(r: RejectedProjection | undefined): string {
  if (r === undefined) return "?";
  const what = `${r.originCluster || "?"}@${shortVersion(r.version)}: ${r.reason || "?"}`;
  return r.message === "" ? what : `${what} (${r.message})`;
}

function cellOf(c: FleetServiceCluster | undefined, cluster: string): FleetCell {
  if (c === undefined) {
    const title = `${cluster}: does not report this service`;
    return { cluster, state: undefined, short: "", version: "", agents: "", rejections: [], title };
  }
  const a = c.agents;
  const total = (a?.inSync ?? 0) + (a?.behind ?? 0) + (a?.rejecting ?? 0);
  const rejections = [
    ...c.importRejections.map((r) => `registrar rejects ${rejectionText(r)}`),
    ...c.agentRejections.map(
      (r) => `${r.agents} agent${r.agents === 1 ? "" : "s"} reject ${rejectionText(r.rejection)}`,
    ),
  ];
  const state = cellState(c.state);
  const title = [
    `${cluster}: ${state ?? "unknown"}${c.stale ? " (stale: last report shown)" : ""}`,
    `version ${c.version || "none"}${c.originCluster === "" ? "" : ` from ${c.originCluster}`}`,
    ...(c.versionsBehind > 0 ? [`${c.versionsBehind} version(s) behind`] : []),
    `agents: ${agentsText(a)}`,
    ...rejections,
  ].join("\n");
  return {
    ...{ cluster, state, short: shortVersion(c.version), version: c.version },
    ...{ agents: total === 0 ? "" : `${a?.inSync ?? 0}/${total}`, rejections, title },
  };
}

function skewText(s: FleetService): string {
  const ms = s.skew === undefined ? 0 : durationMs(s.skew);
  if (s.skewVersions === 0 && ms === 0) return "—";
  return ms > 0 ? `${s.skewVersions}v ${formatSpan(ms)}` : `${s.skewVersions}v`;
}

function rowOf(s: FleetService, columns: readonly FleetColumn[]): FleetRow {
  const byCluster = new Map(s.clusters.map((c) => [c.cluster, c]));
  return {
    ...{ service: s.service, state: cellState(s.state), origin: s.originCluster },
    ...{ version: s.version, short: shortVersion(s.version), skew: skewText(s) },
    cells: columns.map(({ cluster }) => cellOf(byCluster.get(cluster), cluster)),
  };
}

function summaryOf(c: FleetCluster, nowMs: number): ClusterSummary {
  return {
    cluster: c.cluster,
    stale: c.stale,
    services: {
      "in-sync": c.servicesInSync,
      behind: c.servicesBehind,
      rejecting: c.servicesRejecting,
      drifted: c.servicesDrifted,
    },
    agents: agentsText(c.agents),
    lastReport:
      c.lastReportTime === undefined
        ? "never"
        : `${formatSpan(nowMs - timestampMs(c.lastReportTime))} ago`,
  };
}

/**
 * The model of `response` under `filters`. The server applied the cluster
 * and state filters already (GetFleetStatus); they are applied again here
 * (a no-op then) for the fallback's answer, with the namespace and
 * substring filters, which only apply here. Rows keep the answer's order.
 */
export function fleetModel(response: GetFleetStatusResponse, filters: FleetFilters): FleetModel {
  const nowMs = response.time === undefined ? 0 : timestampMs(response.time);
  const clusters = response.clusters.filter(
    (c) => filters.cluster === "" || c.cluster === filters.cluster,
  );
  const columns = clusters.map((c) => ({ cluster: c.cluster, stale: c.stale }));
  const rows = response.services
    .filter((s) => serviceMatches(s.service, filters))
    .map((s) => rowOf(s, columns))
    .filter((row) => filters.state === "" || row.state === filters.state);
  return {
    ...{ columns, rows, summaries: clusters.map((c) => summaryOf(c, nowMs)) },
    ...{ matching: response.matchingServices, received: response.services.length },
    synced: response.synced,
  };
}
