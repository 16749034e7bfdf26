/**
 * The agent's reporting, wired: the refusals it met (`refusal-memory.ts`),
 * the report built from the agent's state when the schedule may send
 * (`applied-report.ts`), and the reporter that sends it
 * (`status-reporter.ts`). `agent.ts` feeds it refusals and changes.
 */
import { hostname } from "node:os";
import { checkAgentId, defaultAgentId } from "../../../services/common/agent-id.js";
import type { ImportCandidate } from "../../../services/common/import-policy.js";
import type { RouteTable } from "../../../services/common/route-merge.js";
import type { Logger } from "../../../services/runtime/logger.js";
import { buildAppliedReport } from "./applied-report.js";
import { createRefusalMemory, type Refusal } from "./refusal-memory.js";
import {
  createStatusReporter,
  type ReporterClient,
  type StatusReportResult,
} from "./status-reporter.js";

/** What the report is built from, read when it is built. */
export interface AgentReportState {
  /** The records followed (the dependency set and `@mesh`). */
  followed(): readonly string[];
  /** The import policy's winners, by record. */
  imported(): ReadonlyMap<string, ImportCandidate>;
  /** The route table served, or undefined. */
  table(): RouteTable | undefined;
  /** Whether the agent serves a route table. */
  ready(): boolean;
  /** The revision of the imported state; 0 when unknown. */
  revision(): bigint;
}

/** Options of {@link createAgentReporter}. */
export interface AgentReporterOptions {
  /** The registrar's client. */
  readonly client: ReporterClient;
  /** The agent's name; default the node name (`NODE_NAME`), else the host name, made valid. */
  readonly agentId?: string | undefined;
  /** The incarnation; default a random UUID. */
  readonly incarnation?: string | undefined;
  /** The agent's state. */
  readonly state: AgentReportState;
  /** The clock; default `Date.now`. */
  readonly now?: () => number;
  /** Counts each report by result. */
  readonly onResult: (result: StatusReportResult) => void;
  /** Logger. */
  readonly logger: Logger;
}

/** The agent's reporting; see the module comment. */
export interface AgentReporter {
  /** The name it reports under. */
  readonly agentId: string;
  /** Notes a refused projection (and looks at the report again). */
  refused(refusal: Refusal): void;
  /** Says the agent's state may have changed. */
  changed(): void;
  /** Says a stream to a registrar reached SYNCED: the report is sent again (the registrar may lack it). */
  connected(): void;
  /** Starts reporting. */
  start(): void;
  /** Stops reporting. */
  stop(): Promise<void>;
}

/**
 * The default agent name, made valid: the node name, else the host name,
 * with every character outside `[A-Za-z0-9._-]` replaced by `-`, at most
 * 253 characters (`agent` when nothing is left).
 */
export function defaultValidAgentId(): string {
  const name = defaultAgentId({ nodeName: process.env.NODE_NAME, hostname: hostname() })
    .replace(/[^A-Za-z0-9._-]/g, "-")
    .slice(0, 253);
  return name === "" ? "agent" : name;
}

/** Creates the reporting; throws a TypeError when `agentId` is not a valid agent name. */
export function createAgentReporter(options: AgentReporterOptions): AgentReporter {
  const agentId = options.agentId ?? defaultValidAgentId();
  const problem = checkAgentId(agentId);
  if (problem !== undefined) throw new TypeError(`agentId: ${problem}`);
  const refusals = createRefusalMemory();
  const { state } = options;
  const reporter = createStatusReporter({
    client: options.client,
    agentId,
    ...(options.incarnation === undefined ? {} : { incarnation: options.incarnation }),
    ...(options.now === undefined ? {} : { now: options.now }),
    logger: options.logger,
    onResult: options.onResult,
    content: () => {
      const followed = state.followed();
      refusals.prune(new Set(followed));
      return buildAppliedReport({
        followed,
        imported: state.imported(),
        table: state.table(),
        refusals,
        ready: state.ready(),
        revision: state.revision(),
      });
    },
  });
  return {
    agentId,
    refused(refusal) {
      refusals.note(refusal);
      reporter.changed();
    },
    changed: () => reporter.changed(),
    connected: () => reporter.connected(),
    start: () => reporter.start(),
    stop: () => reporter.stop(),
  };
}
