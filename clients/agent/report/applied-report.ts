/**
 * What the agent reports to its registrar (`ReportAppliedConfig`): a
 * complete report of every record it follows (its dependency set and the
 * mesh record), each with the imported projection its route table serves
 * from (the import policy's winner: origin and version), the newest refusal
 * newer than that (`refusal-memory.ts`), and whether local (class-2) config
 * wins over it. Bounded as the contract asks: at most
 * {@link MAX_REPORTED_SERVICES} services, messages cut to
 * {@link MAX_MESSAGE_BYTES} bytes, a refused version that does not parse
 * sent empty (its message names it). Pure.
 */
import type { ImportCandidate } from "../../../services/common/import-policy.js";
import { parseVersion } from "../../../services/common/projection-version.js";
import type { RouteTable } from "../../../services/common/route-merge.js";
import { MESH_RECORD } from "../../../services/common/service-name.js";
import { cutUtf8 } from "../../../services/common/utf8-cut.js";
import type { RefusalMemory } from "./refusal-memory.js";

/** The most services one report names. */
export const MAX_REPORTED_SERVICES = 10_000;
/** The longest message sent, in UTF-8 bytes. */
export const MAX_MESSAGE_BYTES = 1024;

/** A refused projection as reported. */
export interface ReportedRefusal {
  readonly originCluster: string;
  readonly version: string;
  readonly reason: string;
  readonly message: string;
}

/** One record as reported (`AppliedService`). */
export interface ReportedRecord {
  readonly service: string;
  readonly originCluster: string;
  readonly version: string;
  readonly rejection?: ReportedRefusal;
  readonly localOverride: boolean;
}

/** The content of a report: everything but the agent's name, incarnation and sequence. */
export interface AppliedReport {
  readonly ready: boolean;
  readonly revision: bigint;
  readonly services: readonly ReportedRecord[];
}

/** What a report is built from. */
export interface AppliedReportInputs {
  /** The records followed (the dependency set and `@mesh`), any order. */
  readonly followed: readonly string[];
  /** The import policy's winners, by record. */
  readonly imported: ReadonlyMap<string, ImportCandidate>;
  /** The route table served, for which records local config decides; undefined before one. */
  readonly table: RouteTable | undefined;
  /** The refusals met. */
  readonly refusals: RefusalMemory;
  /** Whether the agent serves a route table. */
  readonly ready: boolean;
  /** The revision its imported state is consistent with; 0 when unknown. */
  readonly revision: bigint;
}

/** The records whose local config wins in `table`. */
function localWinners(table: RouteTable | undefined): Set<string> {
  const local = new Set<string>();
  for (const entry of table?.services ?? []) if (entry.source === "local") local.add(entry.service);
  if (table?.meshDefaults?.source === "local") local.add(MESH_RECORD);
  return local;
}

/** Builds the report; see the module comment. */
export function buildAppliedReport(inputs: AppliedReportInputs): AppliedReport {
  const followed = [...new Set(inputs.followed)].sort().slice(0, MAX_REPORTED_SERVICES);
  const local = localWinners(inputs.table);
  const services = followed.map((service): ReportedRecord => {
    const winner = inputs.imported.get(service);
    const version = winner?.projection.version ?? "";
    const refusal = inputs.refusals.newest(service, version);
    const parses = refusal !== undefined && parseVersion(refusal.version) !== undefined;
    return {
      service,
      originCluster: winner?.origin ?? "",
      version,
      ...(refusal === undefined
        ? {}
        : {
            rejection: {
              originCluster: refusal.origin,
              version: parses ? refusal.version : "",
              reason: refusal.reason,
              message: cutUtf8(
                parses
                  ? refusal.message
                  : `version ${JSON.stringify(refusal.version)}: ${refusal.message}`,
                MAX_MESSAGE_BYTES,
              ),
            },
          }),
      localOverride: local.has(service),
    };
  });
  return { ready: inputs.ready, revision: inputs.revision, services };
}

/** A string equal for two reports exactly when their content is (what the schedule compares). */
export function reportKey(report: AppliedReport): string {
  return JSON.stringify(report, (_key, value) =>
    typeof value === "bigint" ? String(value) : value,
  );
}
