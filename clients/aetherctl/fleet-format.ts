/**
 * The human-readable form of GetFleetStatus for `aetherctl fleet`: a header,
 * one line per cluster, then one line per service with a cell per cluster
 * and its rejections on indented lines below it. Pure: every age is taken
 * against the response's own `time`.
 */
import { durationMs, timestampMs } from "@bufbuild/protobuf/wkt";
import type {
  AgentCounts,
  FleetCluster,
  FleetService,
  FleetServiceCluster,
  FleetState,
  GetFleetStatusResponse,
  RejectedProjection,
} from "../../gen/aether/registry/v1/fleet_pb.js";
import { FLEET_STATE_NAMES } from "./fleet-flags.js";
import { cleanCell, formatTable, type TableOptions } from "./table-format.js";
import { formatSpan } from "./time-format.js";

/** A state as the table and `--state` spell it (`in_sync`, …); `unspecified` for 0. */
export function fleetStateName(state: FleetState): string {
  return Object.entries(FLEET_STATE_NAMES).find(([, s]) => s === state)?.[0] ?? "unspecified";
}

/** Non-zero counts as `3 in_sync, 1 not_ready`; `-` when all are zero. */
function countsCell(counts: readonly (readonly [string, number])[]): string {
  const parts = counts.filter(([, n]) => n > 0).map(([label, n]) => `${n} ${label}`);
  return parts.length === 0 ? "-" : parts.join(", ");
}

function agentsCell(a: AgentCounts | undefined): string {
  return countsCell([
    ["in_sync", a?.inSync ?? 0],
    ["behind", a?.behind ?? 0],
    ["rejecting", a?.rejecting ?? 0],
    ["not_ready", a?.notReady ?? 0],
  ]);
}

function clusterRow(c: FleetCluster, nowMs: number): string[] {
  const behindMs = c.behindFor === undefined ? 0 : durationMs(c.behindFor);
  return [
    c.cluster,
    c.stale ? "yes" : "no",
    String(c.replicas),
    agentsCell(c.agents),
    countsCell([
      ["in_sync", c.servicesInSync],
      ["behind", c.servicesBehind],
      ["rejecting", c.servicesRejecting],
      ["drifted", c.servicesDrifted],
    ]),
    behindMs > 0 ? formatSpan(behindMs) : "-",
    c.lastReportTime === undefined
      ? "never"
      : `${formatSpan(nowMs - timestampMs(c.lastReportTime))} ago`,
  ];
}

/** One cluster's cell of a service: `east:in_sync 3/3`, `west:behind -2v 1/3`, `west:stale`. */
export function serviceClusterCell(c: FleetServiceCluster): string {
  const parts = [`${c.cluster}:${fleetStateName(c.state)}`];
  if (c.versionsBehind > 0) parts.push(`-${c.versionsBehind}v`);
  const a = c.agents;
  const total = (a?.inSync ?? 0) + (a?.behind ?? 0) + (a?.rejecting ?? 0);
  if (total > 0) parts.push(`${a?.inSync ?? 0}/${total}`);
  return parts.join(" ");
}

function skewCell(s: FleetService): string {
  const ms = s.skew === undefined ? 0 : durationMs(s.skew);
  if (s.skewVersions === 0 && ms === 0) return "-";
  return ms > 0 ? `${s.skewVersions}v ${formatSpan(ms)}` : `${s.skewVersions}v`;
}

function rejectionText(r: RejectedProjection | undefined): string {
  if (r === undefined) return "?";
  const what = `${r.originCluster || "?"}@${r.version || "?"}: ${r.reason || "?"}`;
  return r.message === "" ? what : `${what}: ${r.message}`;
}

/** The indented lines under a service: each cluster's import and agent rejections. */
function rejectionLines(s: FleetService): string[] {
  return s.clusters.flatMap((c) => [
    ...c.importRejections.map((r) => `    ${c.cluster} rejects ${rejectionText(r)}`),
    ...c.agentRejections.map(
      (r) =>
        `    ${c.cluster}: ${r.agents} agent${r.agents === 1 ? "" : "s"} reject ${rejectionText(r.rejection)}`,
    ),
  ]);
}

const SERVICE_HEADER = ["SERVICE", "ORIGIN", "VERSION", "STATE", "SKEW", "CLUSTERS"];

/** The services table, each row followed by its rejection lines. */
function servicesTable(services: readonly FleetService[], options: TableOptions): string {
  const rows = services.map((s) => [
    s.service,
    s.originCluster || "-",
    s.version || "-",
    fleetStateName(s.state),
    skewCell(s),
    s.clusters.length === 0
      ? "(no cluster reports it)"
      : s.clusters.map(serviceClusterCell).join("  "),
  ]);
  // Formatted as one table, then the rejection lines are put under their rows.
  const [header = "", ...lines] = formatTable(SERVICE_HEADER, rows, options).split("\n");
  const out = [header];
  services.forEach((s, i) => {
    out.push(lines[i] ?? "", ...rejectionLines(s).map(cleanCell));
  });
  return `${out.join("\n")}\n`;
}

/** Formats a GetFleetStatus response. */
export function formatFleet(response: GetFleetStatusResponse, options: TableOptions = {}): string {
  const nowMs = response.time === undefined ? 0 : timestampMs(response.time);
  const head = `fleet at ${new Date(nowMs).toISOString()}${response.synced ? "" : " (this registrar is not synced with the store: current versions may be old)"}\n`;
  const clusters =
    response.clusters.length === 0
      ? "clusters: none publishes its import status\n"
      : formatTable(
          ["CLUSTER", "STALE", "REPLICAS", "AGENTS", "SERVICES", "BEHIND FOR", "LAST REPORT"],
          response.clusters.map((c) => clusterRow(c, nowMs)),
          options,
        );
  const shown = response.services.length;
  const matching = response.matchingServices;
  const count =
    shown < matching
      ? `services: ${shown} of ${matching}, worst first (--limit, --state or --service for others)\n`
      : `services: ${matching}\n`;
  const services = shown === 0 ? "" : servicesTable(response.services, options);
  return `${head}\n${clusters}\n${count}${services}`;
}
