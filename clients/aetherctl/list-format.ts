/**
 * The table of `aetherctl list`: one row per projection with its service,
 * origin, version, how many routes and rules it has, its age, and the key
 * that signed it (marked when it failed to verify). Pure.
 */
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import { type SignatureReport, signedCell } from "./signature-report.js";
import { formatTable, type TableOptions } from "./table-format.js";
import { formatAge } from "./time-format.js";

/** The columns of the list table. */
export const LIST_HEADER = [
  "SERVICE",
  "ORIGIN",
  "VERSION",
  "ROUTES",
  "RULES",
  "AGE",
  "SIGNED",
] as const;

/**
 * The cells of one projection's row, in {@link LIST_HEADER} order; `nowMs`
 * is the current time, `signature` the report on its signature.
 */
export function listRow(
  projection: ServiceConfigProjection,
  nowMs: number,
  signature: SignatureReport,
): string[] {
  const rules = projection.routes.reduce((sum, route) => sum + route.rules.length, 0);
  return [
    projection.service,
    projection.originCluster,
    projection.version,
    String(projection.routes.length),
    String(rules),
    formatAge(projection.version, nowMs),
    signedCell(signature),
  ];
}

/**
 * Formats projections as the list table, in the order given (the registrar's
 * order). With no projections it returns a sentence instead of an empty
 * table, so that a human sees the listing was empty rather than broken.
 * `signatureOf` reports on each projection's signature.
 */
export function formatListTable(
  projections: readonly ServiceConfigProjection[],
  nowMs: number,
  signatureOf: (projection: ServiceConfigProjection) => SignatureReport,
  options: TableOptions = {},
): string {
  if (projections.length === 0) return "no projections\n";
  return formatTable(
    LIST_HEADER,
    projections.map((p) => listRow(p, nowMs, signatureOf(p))),
    options,
  );
}
