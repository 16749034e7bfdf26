/**
 * The check of an agent's `ReportAppliedConfig` request: what the agent
 * table may keep (see `agent-table.ts`). A request is taken whole or refused
 * naming the first field that is wrong, never partly. Pure, no I/O.
 */
import type { ReportAppliedConfigRequest } from "../../../gen/aether/registry/v1/fleet_pb.js";
import { checkAgentId } from "../../common/agent-id.js";
import { parseVersion } from "../../common/projection-version.js";
import { checkClusterName, checkRecordName } from "../../common/service-name.js";
import { cutUtf8 } from "../../common/utf8-cut.js";

/** The most services one report may name (the contract's bound). */
export const MAX_REPORTED_SERVICES = 10_000;
/** The longest operator message kept, in UTF-8 bytes; longer ones are cut. */
export const MAX_MESSAGE_BYTES = 1024;
/** The longest incarnation token accepted, in characters. */
export const MAX_INCARNATION_LENGTH = 128;
/** The longest rejection reason accepted, in characters. */
export const MAX_REASON_LENGTH = 64;

const REASON = /^[A-Za-z0-9._-]+$/;

/** A refused projection, as the table keeps it. */
export interface ReportedRejection {
  /** Its origin. */
  readonly origin: string;
  /** Its version; empty when the agent could not name one. */
  readonly version: string;
  /** The machine-readable reason. */
  readonly reason: string;
  /** A sentence for operators, at most {@link MAX_MESSAGE_BYTES}. */
  readonly message: string;
}

/** One service of a report, as the table keeps it. */
export interface ReportedService {
  /** The applied projection's origin; empty when none is applied. */
  readonly origin: string;
  /** The applied projection's version; empty when none is applied. */
  readonly version: string;
  /** The newest refused projection, when newer than the applied one. */
  readonly rejection: ReportedRejection | undefined;
  /** Whether the cluster's local config wins over the imported projection. */
  readonly localOverride: boolean;
}

/** A checked report. */
export interface CheckedReport {
  /** The agent's name. */
  readonly agentId: string;
  /** Its process's token. */
  readonly incarnation: string;
  /** The report's sequence within the incarnation. */
  readonly sequence: bigint;
  /** Whether the agent serves a route table. */
  readonly ready: boolean;
  /** Every service it reports, by service. */
  readonly services: ReadonlyMap<string, ReportedService>;
}

/** The outcome of {@link checkReport}: the report, or the problem naming its field. */
export type ReportCheck =
  | { readonly report: CheckedReport; readonly problem?: undefined }
  | { readonly report?: undefined; readonly problem: string };

/** A problem with an applied or refused origin and version pair, or undefined. */
function pairProblem(field: string, origin: string, version: string): string | undefined {
  if (origin !== "") {
    const problem = checkClusterName(origin);
    if (problem !== undefined) return `${field}.origin_cluster: ${problem}`;
  }
  if (version !== "" && parseVersion(version) === undefined) {
    return `${field}.version: ${JSON.stringify(version)} is not an RFC 3339 timestamp`;
  }
  if (version !== "" && origin === "") return `${field}.origin_cluster: empty while version is set`;
  return undefined;
}

/** Checks one service entry of the report. */
function checkService(
  field: string,
  entry: ReportAppliedConfigRequest["services"][number],
):
  | { readonly service: ReportedService; readonly problem?: undefined }
  | { readonly problem: string } {
  const problem = pairProblem(field, entry.originCluster, entry.version);
  if (problem !== undefined) return { problem };
  const refused = entry.rejection;
  let rejection: ReportedRejection | undefined;
  if (refused !== undefined) {
    const refusedProblem =
      (refused.originCluster === "" ? `${field}.rejection.origin_cluster: empty` : undefined) ??
      pairProblem(`${field}.rejection`, refused.originCluster, refused.version);
    if (refusedProblem !== undefined) return { problem: refusedProblem };
    if (!REASON.test(refused.reason) || refused.reason.length > MAX_REASON_LENGTH) {
      return {
        problem: `${field}.rejection.reason: ${JSON.stringify(refused.reason.slice(0, MAX_REASON_LENGTH))} is not 1 to ${MAX_REASON_LENGTH} characters of [A-Za-z0-9._-]`,
      };
    }
    rejection = {
      origin: refused.originCluster,
      version: refused.version,
      reason: refused.reason,
      message: cutUtf8(refused.message, MAX_MESSAGE_BYTES),
    };
  }
  return {
    service: {
      origin: entry.originCluster,
      version: entry.version,
      rejection,
      localOverride: entry.localOverride,
    },
  };
}

/** Checks a report; see the module comment. */
export function checkReport(request: ReportAppliedConfigRequest): ReportCheck {
  const idProblem = checkAgentId(request.agentId);
  if (idProblem !== undefined) return { problem: `agent_id: ${idProblem}` };
  if (request.incarnation === "" || request.incarnation.length > MAX_INCARNATION_LENGTH) {
    return { problem: `incarnation: must be 1 to ${MAX_INCARNATION_LENGTH} characters` };
  }
  if (request.services.length > MAX_REPORTED_SERVICES) {
    return {
      problem: `services: ${request.services.length} entries, at most ${MAX_REPORTED_SERVICES}`,
    };
  }
  const services = new Map<string, ReportedService>();
  for (const [index, entry] of request.services.entries()) {
    const field = `services[${index}]`;
    const nameProblem = checkRecordName(entry.service);
    if (nameProblem !== undefined) return { problem: `${field}.service: ${nameProblem}` };
    if (services.has(entry.service)) {
      return { problem: `${field}.service: ${JSON.stringify(entry.service)} appears twice` };
    }
    const checked = checkService(field, entry);
    if (checked.problem !== undefined) return { problem: checked.problem };
    services.set(entry.service, checked.service);
  }
  return {
    report: {
      agentId: request.agentId,
      incarnation: request.incarnation,
      sequence: request.sequence,
      ready: request.ready,
      services,
    },
  };
}
