/**
 * The table of agents reporting to this replica (`ReportAppliedConfig`), and
 * the {@link AgentReportsView} the import-status publisher reads it through.
 *
 * - Keyed by the caller's verified SPIFFE ID (empty without mutual TLS) and
 *   the report's `agent_id`, so one workload cannot overwrite another's
 *   record under mutual TLS.
 * - A report of another incarnation than the recorded one replaces the
 *   record; one of the same incarnation is taken only when its sequence is
 *   above the last accepted one (else `stale_sequence`: a late retry).
 * - At most `maxAgents` are tracked: a new one beyond is `over_limit`.
 * - An agent not heard from for three report intervals is forgotten
 *   ({@link AgentTable.expire}; the shell sweeps).
 * - Judging against the served version: applied equals served is in sync;
 *   the served version refused is rejecting; anything else is behind, and
 *   with nothing served, applying nothing is in sync, applying something is
 *   behind (the registrar and the agent disagree).
 *
 * Pure: the clock is given, no timers, no I/O.
 */
import { create } from "@bufbuild/protobuf";
import {
  RejectedProjectionSchema,
  type ReportAppliedConfigRequest,
} from "../../../gen/aether/registry/v1/fleet_pb.js";
import { parseVersion } from "../../common/projection-version.js";
import {
  type CheckedReport,
  checkReport,
  type ReportedRejection,
  type ReportedService,
} from "./agent-report-check.js";
import type {
  AgentRejectionTally,
  AgentReportsView,
  AgentTally,
  ServedVersion,
} from "./fleet-inputs.js";

/** The default most agents one replica tracks. */
export const DEFAULT_MAX_AGENTS = 10_000;
/** A service no agent reports: the same frozen answer every time. */
const NO_AGENTS = Object.freeze({
  tally: Object.freeze({ inSync: 0, behind: 0, rejecting: 0, notReady: 0 }),
  rejections: Object.freeze([]) as readonly AgentRejectionTally[],
});

/** The most rejection kinds {@link AgentReportsView.serviceAgents} returns per service. */
export const MAX_REJECTION_KINDS = 8;
/** How many report intervals an agent may stay silent before it is forgotten. */
export const EXPIRY_INTERVALS = 3;

/** What became of one report (a metric label). */
export type ReportResult = "accepted" | "unchanged" | "stale_sequence" | "invalid" | "over_limit";

/** Every {@link ReportResult}, for metrics that pre-register their label values. */
export const REPORT_RESULTS: readonly ReportResult[] = [
  "accepted",
  "unchanged",
  "stale_sequence",
  "invalid",
  "over_limit",
];

/** The outcome of {@link AgentTable.report}. */
export interface ReportOutcome {
  /** What became of the report. */
  readonly result: ReportResult;
  /** For `invalid`, the problem naming the field; for `over_limit`, a sentence. */
  readonly problem?: string;
}

/** An agent's state for one service, or in total. */
export type AgentState = "inSync" | "behind" | "rejecting";

/** Options of {@link createAgentTable}. */
export interface AgentTableOptions {
  /** The clock, in milliseconds since the epoch. */
  readonly now: () => number;
  /** The report interval agents are told, in milliseconds (forgotten after three). */
  readonly intervalMs: number;
  /** The most agents tracked; default {@link DEFAULT_MAX_AGENTS}. */
  readonly maxAgents?: number;
  /** Called when a change listener throws (the others are still called). */
  readonly onListenerError?: (error: unknown) => void;
}

/** The table; see the module comment. */
export interface AgentTable extends AgentReportsView {
  /** How many agents are tracked. */
  readonly size: number;
  /** Takes one report from `caller` (its verified SPIFFE ID, or empty). */
  report(caller: string, request: ReportAppliedConfigRequest): ReportOutcome;
  /** Forgets every agent not heard from for three intervals before `now`; returns how many. */
  expire(now: number): number;
}

interface AgentRecord {
  readonly incarnation: string;
  readonly sequence: bigint;
  readonly ready: boolean;
  readonly services: ReadonlyMap<string, ReportedService>;
  readonly seenMs: number;
}

/** How an agent's `entry` for a service stands against what is served. */
export function judgeService(
  entry: ReportedService,
  served: ServedVersion | undefined,
): AgentState {
  if (served === undefined) return entry.version === "" ? "inSync" : "behind";
  if (entry.origin === served.origin && entry.version === served.version) return "inSync";
  const refused = entry.rejection;
  if (
    refused !== undefined &&
    refused.origin === served.origin &&
    refused.version === served.version
  ) {
    return "rejecting";
  }
  return "behind";
}

const RANK: Record<AgentState, number> = { inSync: 0, behind: 1, rejecting: 2 };

function sameRejection(
  a: ReportedRejection | undefined,
  b: ReportedRejection | undefined,
): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    a.origin === b.origin &&
    a.version === b.version &&
    a.reason === b.reason &&
    a.message === b.message
  );
}

/** Whether two reports say the same (what the view reads: readiness and services). */
function sameContent(a: AgentRecord, b: CheckedReport): boolean {
  if (a.ready !== b.ready || a.services.size !== b.services.size) return false;
  for (const [service, entry] of b.services) {
    const old = a.services.get(service);
    if (
      old === undefined ||
      old.origin !== entry.origin ||
      old.version !== entry.version ||
      old.localOverride !== entry.localOverride ||
      !sameRejection(old.rejection, entry.rejection)
    ) {
      return false;
    }
  }
  return true;
}

/** Newest version first (an empty or unparseable version last), then origin and reason. */
function compareRejections(a: ReportedRejection, b: ReportedRejection): number {
  const va = parseVersion(a.version) ?? -1n;
  const vb = parseVersion(b.version) ?? -1n;
  if (va !== vb) return va > vb ? -1 : 1;
  return a.origin.localeCompare(b.origin) || a.reason.localeCompare(b.reason);
}

/** Creates an empty table. */
export function createAgentTable(options: AgentTableOptions): AgentTable {
  const maxAgents = options.maxAgents ?? DEFAULT_MAX_AGENTS;
  const agents = new Map<string, AgentRecord>();
  /** The agents reporting each service. */
  const byService = new Map<string, Set<AgentRecord>>();
  const listeners = new Set<() => void>();

  const index = (record: AgentRecord, add: boolean) => {
    for (const service of record.services.keys()) {
      let set = byService.get(service);
      if (add) {
        if (set === undefined) {
          set = new Set();
          byService.set(service, set);
        }
        set.add(record);
      } else if (set !== undefined) {
        set.delete(record);
        if (set.size === 0) byService.delete(service);
      }
    }
  };
  const put = (key: string, record: AgentRecord) => {
    const old = agents.get(key);
    if (old !== undefined) index(old, false);
    agents.set(key, record);
    index(record, true);
  };
  const changed = () => {
    for (const listener of [...listeners]) {
      try {
        listener();
      } catch (error) {
        options.onListenerError?.(error);
      }
    }
  };
  const expire = (now: number): number => {
    const limit = now - EXPIRY_INTERVALS * options.intervalMs;
    let forgotten = 0;
    for (const [key, record] of agents) {
      if (record.seenMs > limit) continue;
      index(record, false);
      agents.delete(key);
      forgotten++;
    }
    if (forgotten > 0) changed();
    return forgotten;
  };

  return {
    get size() {
      return agents.size;
    },
    report(caller, request) {
      const checked = checkReport(request);
      if (checked.problem !== undefined) return { result: "invalid", problem: checked.problem };
      const report = checked.report;
      const key = `${caller}\u0000${report.agentId}`;
      const now = options.now();
      let old = agents.get(key);
      if (old === undefined && agents.size >= maxAgents) {
        expire(now);
        old = agents.get(key);
        if (agents.size >= maxAgents) {
          return {
            result: "over_limit",
            problem: `this registrar already tracks its maximum of ${maxAgents} reporting agents`,
          };
        }
      }
      if (
        old !== undefined &&
        old.incarnation === report.incarnation &&
        report.sequence <= old.sequence
      ) {
        return { result: "stale_sequence" };
      }
      const record: AgentRecord = {
        incarnation: report.incarnation,
        sequence: report.sequence,
        ready: report.ready,
        services: report.services,
        seenMs: now,
      };
      const unchanged = old !== undefined && sameContent(old, report);
      put(key, unchanged ? { ...record, services: (old as AgentRecord).services } : record);
      if (unchanged) return { result: "unchanged" };
      changed();
      return { result: "accepted" };
    },
    expire,
    reportedServices: () => byService.keys(),
    serviceAgents(service, served) {
      // Most services of a large mesh have no reporting agent here: no allocation for them.
      if (!byService.has(service)) return NO_AGENTS;
      let inSync = 0;
      let behind = 0;
      let rejecting = 0;
      const kinds = new Map<string, { rejection: ReportedRejection; agents: number }>();
      for (const record of byService.get(service) ?? []) {
        const entry = record.services.get(service) as ReportedService;
        const state = judgeService(entry, served);
        if (state === "inSync") inSync++;
        else if (state === "behind") behind++;
        else rejecting++;
        const refused = entry.rejection;
        if (refused === undefined) continue;
        const kind = `${refused.origin}\u0000${refused.version}\u0000${refused.reason}`;
        const found = kinds.get(kind);
        if (found === undefined) kinds.set(kind, { rejection: refused, agents: 1 });
        else found.agents++;
      }
      const rejections: AgentRejectionTally[] = [...kinds.values()]
        .sort((a, b) => compareRejections(a.rejection, b.rejection))
        .slice(0, MAX_REJECTION_KINDS)
        .map(({ rejection, agents: count }) => ({
          rejection: create(RejectedProjectionSchema, {
            originCluster: rejection.origin,
            version: rejection.version,
            reason: rejection.reason,
            message: rejection.message,
          }),
          agents: count,
        }));
      return { tally: { inSync, behind, rejecting, notReady: 0 }, rejections };
    },
    totals(served) {
      const tally = { inSync: 0, behind: 0, rejecting: 0, notReady: 0 };
      const cache = new Map<string, ServedVersion | undefined>();
      const servedOf = (service: string) => {
        if (!cache.has(service)) cache.set(service, served(service));
        return cache.get(service);
      };
      for (const record of agents.values()) {
        if (!record.ready) {
          tally.notReady++;
          continue;
        }
        let worst: AgentState = "inSync";
        for (const [service, entry] of record.services) {
          const state = judgeService(entry, servedOf(service));
          if (RANK[state] > RANK[worst]) worst = state;
          if (worst === "rejecting") break;
        }
        tally[worst]++;
      }
      return tally satisfies AgentTally;
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
