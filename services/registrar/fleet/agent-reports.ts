/**
 * The agents' reports as the registrar serves them: the `ReportAppliedConfig`
 * handler over the pure agent table (`agent-table.ts`), the timer that
 * forgets silent agents (unref'd: it never keeps the process alive), and the
 * metrics and log lines of what became of each report.
 */
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  type ReportAppliedConfigRequest,
  type ReportAppliedConfigResponse,
  ReportAppliedConfigResponseSchema,
} from "../../../gen/aether/registry/v1/fleet_pb.js";
import type { Logger } from "../../runtime/logger.js";
import { PEER_SPIFFE_ID } from "../server/peer-identity.js";
import { type AgentTable, createAgentTable, type ReportResult } from "./agent-table.js";
import type { AgentReportsView } from "./fleet-inputs.js";

/** The default report interval agents are told: 30 seconds. */
export const DEFAULT_AGENT_REPORT_INTERVAL_MS = 30_000;

/** Options of {@link createAgentReports}. */
export interface AgentReportsOptions {
  /** The report interval agents are told, in milliseconds; silent agents are forgotten after three. */
  readonly intervalMs: number;
  /** The most agents tracked; default 10000. */
  readonly maxAgents?: number;
  /** The clock, in milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
  /** Counts each report by what became of it. */
  readonly countReport?: (result: ReportResult) => void;
  /** Where refused reports and forgotten agents are logged. */
  readonly logger: Logger;
}

/** The agents' reports: the table, its handler and its sweep. */
export interface AgentReports {
  /** The table, as the import-status publisher reads it. */
  readonly view: AgentReportsView;
  /** How many agents are tracked (a gauge). */
  readonly size: number;
  /** Answers `ReportAppliedConfig` (ConfigService's `reportApplied` option). */
  handle(request: ReportAppliedConfigRequest, context: HandlerContext): ReportAppliedConfigResponse;
  /** Starts forgetting silent agents, every interval. Idempotent. */
  start(): void;
  /** Stops the sweep. */
  stop(): void;
}

/** Creates the reports' table and handler; nothing runs until `start()`. */
export function createAgentReports(options: AgentReportsOptions): AgentReports {
  const { logger, intervalMs } = options;
  const now = options.now ?? Date.now;
  const table: AgentTable = createAgentTable({
    now,
    intervalMs,
    ...(options.maxAgents === undefined ? {} : { maxAgents: options.maxAgents }),
    onListenerError: (error) => logger.error({ err: error }, "an agent-report listener failed"),
  });
  const response = create(ReportAppliedConfigResponseSchema, {
    reportInterval: durationFromMs(intervalMs),
  });
  let sweep: NodeJS.Timeout | undefined;
  return {
    view: table,
    get size() {
      return table.size;
    },
    handle(request, context) {
      const caller = context.values.get(PEER_SPIFFE_ID)?.text ?? "";
      const outcome = table.report(caller, request);
      options.countReport?.(outcome.result);
      if (outcome.result === "invalid") {
        logger.debug({ caller, problem: outcome.problem }, "agent report refused");
        throw new ConnectError(outcome.problem ?? "invalid report", Code.InvalidArgument);
      }
      if (outcome.result === "over_limit") {
        throw new ConnectError(outcome.problem ?? "too many agents", Code.ResourceExhausted);
      }
      return response;
    },
    start() {
      if (sweep !== undefined) return;
      sweep = setInterval(() => {
        const forgotten = table.expire(now());
        if (forgotten > 0) {
          logger.info({ forgotten, agents: table.size }, "forgot agents that stopped reporting");
        }
      }, intervalMs);
      sweep.unref();
    },
    stop() {
      clearInterval(sweep);
      sweep = undefined;
    },
  };
}
