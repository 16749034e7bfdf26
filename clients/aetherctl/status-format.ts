/**
 * The human-readable form of a registrar's GetConfigStatus for `aetherctl
 * status`: a header (cluster, control cluster, store, synced, revision), the
 * per-origin table, the import rejections and conflicts, and the export
 * state with its route rejections and source problems. The registrar bounds
 * every list (the first hundred entries, then a final entry counting the
 * rest); such a section says `(100 of 384,953)` and how many are not shown.
 * Pure.
 */
import type {
  ExportStatus,
  GetConfigStatusResponse,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import {
  groupDigits,
  omittedCount,
  TRUNCATED_REASON,
  TRUNCATED_WHERE,
} from "../../services/common/bounded-list.js";
import { formatFields, formatTable, type TableOptions } from "./table-format.js";
import { formatAge, formatSpan } from "./time-format.js";

function yesNo(value: boolean): string {
  return value ? "yes" : "no";
}

/**
 * A list of a status response without its final synthetic entry, if it has
 * one: the registrar bounds every list and counts what it left out in a
 * final entry (see `services/common/bounded-list.ts`).
 */
interface Listed<T> {
  /** The real entries. */
  readonly items: readonly T[];
  /** How many more the registrar left out (0 when the list is complete). */
  readonly omitted: number;
}

/**
 * Splits `list` into its real entries and the count its final entry carries,
 * when `marker` reads one (a count) off that entry.
 */
function listed<T>(list: readonly T[], marker: (last: T) => number | undefined): Listed<T> {
  const last = list[list.length - 1];
  const omitted = last === undefined ? undefined : marker(last);
  return omitted === undefined
    ? { items: list, omitted: 0 }
    : { items: list.slice(0, -1), omitted };
}

/** The count a `truncated` rejection carries in its message. */
const truncatedRejection = (r: { reason: string; message: string }) =>
  r.reason === TRUNCATED_REASON ? (omittedCount(r.message) ?? 0) : undefined;

/** The count a `(truncated)` source problem carries in its message. */
const truncatedProblem = (p: { where: string; message: string }) =>
  p.where === TRUNCATED_WHERE ? (omittedCount(p.message) ?? 0) : undefined;

/**
 * A section: its title with a count and a table, or `TITLE: none`. A
 * truncated list (`omitted` more) says `(100 of 384,953)` and ends with a
 * line counting what is not shown.
 */
function section(
  title: string,
  header: readonly string[],
  rows: readonly (readonly string[])[],
  options: TableOptions,
  omitted = 0,
): string {
  if (rows.length === 0 && omitted === 0) return `${title}: none\n`;
  if (omitted === 0) return `${title} (${rows.length})\n${formatTable(header, rows, options)}`;
  const total = groupDigits(rows.length + omitted);
  const more = `${options.indent ?? ""}… ${groupDigits(omitted)} more not shown\n`;
  return `${title} (${rows.length} of ${total})\n${formatTable(header, rows, options)}${more}`;
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
      ["signing key", exp.signingKeyId === "" ? "none (unsigned)" : exp.signingKeyId],
      ["last success", timeWithAge(exp.lastSuccessTime, nowMs)],
      ["last error", exp.lastError === "" ? "none" : exp.lastError],
    ],
    { indent: "  " },
  );
  const nested = { ...options, indent: "  " };
  const rejected = listed(exp.routeRejections, truncatedRejection);
  const routeRejections = section(
    "  ROUTE REJECTIONS",
    ["KIND", "NS/NAME", "REASON", "MESSAGE"],
    rejected.items.map((r) => [r.kind, `${r.namespace}/${r.name}`, r.reason, r.message]),
    nested,
    rejected.omitted,
  );
  const problems = listed(exp.sourceProblems, truncatedProblem);
  const sourceProblems = section(
    "  SOURCE PROBLEMS",
    ["WHERE", "MESSAGE"],
    problems.items.map((p) => [p.where, p.message]),
    nested,
    problems.omitted,
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
    [
      "synced",
      status.synced || status.storeError === ""
        ? yesNo(status.synced)
        : `no: ${status.storeError} (what follows is the view it last synced, still served to its watch streams)`,
    ],
    ["revision", String(status.revision)],
  ]);
  const originList = listed(status.origins, (o) => omittedCount(o.origin));
  const rejectionList = listed(status.rejections, truncatedRejection);
  const conflictList = listed(status.conflicts, (c) => omittedCount(c.service));
  const origins = section(
    "ORIGINS",
    ["ORIGIN", "PROJECTIONS", "NEWEST", "OLDEST", "TRUSTED"],
    originList.items.map((o) => [
      o.origin,
      String(o.projections),
      o.newestVersion === "" ? "-" : `${o.newestVersion} (${formatAge(o.newestVersion, nowMs)})`,
      o.oldestVersion === "" ? "-" : `${o.oldestVersion} (${formatAge(o.oldestVersion, nowMs)})`,
      yesNo(o.trusted),
    ]),
    options,
    originList.omitted,
  );
  const rejections = section(
    "REJECTIONS",
    ["SERVICE", "ORIGIN", "REASON", "MESSAGE"],
    rejectionList.items.map((r) => [r.service, r.originCluster, r.reason, r.message]),
    options,
    rejectionList.omitted,
  );
  const conflicts = section(
    "CONFLICTS",
    ["SERVICE", "WINNER", "VERSION", "LOSERS"],
    conflictList.items.map((c) => [
      c.service,
      c.winnerOrigin,
      c.winnerVersion,
      c.loserOrigins.join(","),
    ]),
    options,
    conflictList.omitted,
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
 * routes the exporter rejected, and problems reading the export source,
 * including those a truncated list counts in its final entry rather than
 * lists. Conflicts are not problems: in federated mode they are resolved by
 * design.
 */
export function countStatusProblems(status: GetConfigStatusResponse): number {
  const count = (list: Listed<unknown>) => list.items.length + list.omitted;
  return (
    count(listed(status.rejections, truncatedRejection)) +
    count(listed(status.export?.routeRejections ?? [], truncatedRejection)) +
    count(listed(status.export?.sourceProblems ?? [], truncatedProblem))
  );
}
