/**
 * The human-readable form of a registrar's GetConfigStatus for `aetherctl
 * status`: a header (cluster, control cluster, store, synced, revision), the
 * per-origin table, the import rejections and conflicts, and the export
 * state with its route rejections and source problems. Pure.
 */
import type {
  ExportStatus,
  GetConfigStatusResponse,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import { formatFields, formatTable, type TableOptions } from "./table-format.js";
import { formatAge, formatSpan } from "./time-format.js";

function yesNo(value: boolean): string {
  return value ? "yes" : "no";
}

/** A section: its title with a count and a table, or `TITLE: none`. */
function section(
  title: string,
  header: readonly string[],
  rows: readonly (readonly string[])[],
  options: TableOptions,
): string {
  if (rows.length === 0) return `${title}: none\n`;
  return `${title} (${rows.length})\n${formatTable(header, rows, options)}`;
}

/** A time (RFC 3339) with its age, `2026-11-29T12:00:00Z (5m ago)`; `never` when empty. */
function timeWithAge(time: string, nowMs: number): string {
  if (time === "") return "never";
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? time : `${time} (${formatSpan(nowMs - ms)} ago)`;
}

function exportSection(
  exp: ExportStatus | undefined,
  nowMs: number,
  options: TableOptions,
): string {
  if (exp === undefined || !exp.enabled) {
    const reason = exp?.disabledReason ? ` (${exp.disabledReason})` : "";
    return `EXPORT\n${formatFields([["enabled", `no${reason}`]], { indent: "  " })}`;
  }
  const fields = formatFields(
    [
      ["enabled", "yes"],
      ["source", exp.source],
      ["leader", yesNo(exp.leader)],
      ["services", String(exp.services)],
      ["last success", timeWithAge(exp.lastSuccessTime, nowMs)],
      ["last error", exp.lastError === "" ? "none" : exp.lastError],
    ],
    { indent: "  " },
  );
  const nested = { ...options, indent: "  " };
  const routeRejections = section(
    "  ROUTE REJECTIONS",
    ["KIND", "NS/NAME", "REASON", "MESSAGE"],
    exp.routeRejections.map((r) => [r.kind, `${r.namespace}/${r.name}`, r.reason, r.message]),
    nested,
  );
  const sourceProblems = section(
    "  SOURCE PROBLEMS",
    ["WHERE", "MESSAGE"],
    exp.sourceProblems.map((p) => [p.where, p.message]),
    nested,
  );
  return `EXPORT\n${fields}${routeRejections}${sourceProblems}`;
}

/**
 * Formats a status response. `nowMs` is the current time (for the ages of
 * versions and of the last export). Returns the text with a final `\n`.
 */
export function formatStatus(
  status: GetConfigStatusResponse,
  nowMs: number,
  options: TableOptions = {},
): string {
  const header = formatFields([
    ["cluster", status.cluster],
    [
      "control cluster",
      status.controlCluster === ""
        ? "none (federated: every origin is trusted)"
        : status.controlCluster,
    ],
    ["store", status.store],
    ["synced", yesNo(status.synced)],
    ["revision", String(status.revision)],
  ]);
  const origins = section(
    "ORIGINS",
    ["ORIGIN", "PROJECTIONS", "NEWEST", "OLDEST", "TRUSTED"],
    status.origins.map((o) => [
      o.origin,
      String(o.projections),
      o.newestVersion === "" ? "-" : `${o.newestVersion} (${formatAge(o.newestVersion, nowMs)})`,
      o.oldestVersion === "" ? "-" : `${o.oldestVersion} (${formatAge(o.oldestVersion, nowMs)})`,
      yesNo(o.trusted),
    ]),
    options,
  );
  const rejections = section(
    "REJECTIONS",
    ["SERVICE", "ORIGIN", "REASON", "MESSAGE"],
    status.rejections.map((r) => [r.service, r.originCluster, r.reason, r.message]),
    options,
  );
  const conflicts = section(
    "CONFLICTS",
    ["SERVICE", "WINNER", "VERSION", "LOSERS"],
    status.conflicts.map((c) => [
      c.service,
      c.winnerOrigin,
      c.winnerVersion,
      c.loserOrigins.join(","),
    ]),
    options,
  );
  return [
    header,
    origins,
    rejections,
    conflicts,
    exportSection(status.export, nowMs, options),
  ].join("\n");
}

/**
 * Counts the problems `--fail-on-rejections` fails on: import rejections,
 * routes the exporter rejected, and problems reading the export source.
 * Conflicts are not problems: in federated mode they are resolved by design.
 */
export function countStatusProblems(status: GetConfigStatusResponse): number {
  return (
    status.rejections.length +
    (status.export?.routeRejections.length ?? 0) +
    (status.export?.sourceProblems.length ?? 0)
  );
}
