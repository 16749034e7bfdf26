/**
 * The agent's status reporter: sends `ReportAppliedConfig` (what it applied
 * and refused, `applied-report.ts`) to the registrar it follows, over the
 * same client (the same connection, TLS and interceptors as WatchConfig and
 * the polls). When to send is decided by the pure `report-schedule.ts`;
 * this shell owns the one timer, the call and the backoff.
 *
 * Failures never touch applying config: a failed report is retried after
 * the shared jittered exponential backoff (`services/runtime/backoff.ts`),
 * logged when a run of failures starts and when it ends; a registrar that
 * answers UNIMPLEMENTED (an older release) is asked again only every
 * {@link UNIMPLEMENTED_RETRY_MS}, logged once at info.
 */
import { randomUUID } from "node:crypto";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { ConfigService } from "../../../gen/aether/registry/v1/config_service_pb.js";
import { type Backoff, createBackoff } from "../../../services/runtime/backoff.js";
import type { Logger } from "../../../services/runtime/logger.js";
import { type AppliedReport, reportKey } from "./applied-report.js";
import {
  decideReport,
  INITIAL_SCHEDULE,
  type ReportSchedule,
  registrarMayNotHave,
  reportAcknowledged,
  reportFailed,
  reportIntervalMs,
  reportSent,
} from "./report-schedule.js";

/** How long the reporter waits before asking a registrar that does not implement reports again. */
export const UNIMPLEMENTED_RETRY_MS = 10 * 60_000;

/** What became of one report (a metric label). */
export type StatusReportResult = "ok" | "error" | "unimplemented";

/** The part of the generated ConfigService client the reporter uses. */
export type ReporterClient = Pick<Client<typeof ConfigService>, "reportAppliedConfig">;

/** Options of {@link createStatusReporter}. */
export interface StatusReporterOptions {
  /** The client of the registrar the agent follows. */
  readonly client: ReporterClient;
  /** The agent's name (`agent_id`). */
  readonly agentId: string;
  /** This process's token (`incarnation`); default a random UUID. */
  readonly incarnation?: string;
  /** The report's content now (built when the schedule may send). */
  content(): AppliedReport;
  /** Called with what became of each report. */
  readonly onResult?: (result: StatusReportResult) => void;
  /** Logger. */
  readonly logger: Logger;
  /** The clock, in milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
  /** Uniform numbers in [0, 1) for the backoff's jitter; default `Math.random`. */
  readonly random?: () => number;
  /** The timeout of each call, in milliseconds; default 10000. */
  readonly requestTimeoutMs?: number;
  /** The retry delays after a failure, before jitter; default 1 s doubling to 60 s. */
  readonly backoff?: { readonly initialMs: number; readonly maxMs: number };
}

/** A running reporter. */
export interface StatusReporter {
  /** The incarnation it reports under. */
  readonly incarnation: string;
  /** Starts reporting (the first report at once). Idempotent. */
  start(): void;
  /** Says the content may have changed; looked at once per turn of the event loop. */
  changed(): void;
  /** Says the agent (re)connected to a registrar, which may not have the last report: it is sent again. */
  connected(): void;
  /** Stops: cancels the call in flight and the timer; resolves once the call ended. */
  stop(): Promise<void>;
}

/** Creates a reporter; nothing is sent until `start()`. */
export function createStatusReporter(options: StatusReporterOptions): StatusReporter {
  const { client, logger } = options;
  const now = options.now ?? Date.now;
  const incarnation = options.incarnation ?? randomUUID();
  const backoff: Backoff = createBackoff({
    initialMs: options.backoff?.initialMs ?? 1_000,
    maxMs: options.backoff?.maxMs ?? 60_000,
    ...(options.random === undefined ? {} : { random: options.random }),
  });
  const aborted = new AbortController();
  let schedule: ReportSchedule = INITIAL_SCHEDULE;
  let sequence = 0n;
  let timer: NodeJS.Timeout | undefined;
  let started = false;
  let queued = false;
  let inFlight: Promise<void> | undefined;
  let failing = false;
  let toldUnimplemented = false;

  const failed = (error: unknown) => {
    const code = ConnectError.from(error).code;
    if (code === Code.Unimplemented) {
      options.onResult?.("unimplemented");
      if (!toldUnimplemented) {
        toldUnimplemented = true;
        logger.info(
          { retryMinutes: UNIMPLEMENTED_RETRY_MS / 60_000 },
          "the registrar does not take status reports (an older release); asking again later",
        );
      }
      schedule = reportFailed(schedule, now(), UNIMPLEMENTED_RETRY_MS);
      return;
    }
    options.onResult?.("error");
    const delayMs = Math.round(backoff.next());
    const fields = { code: Code[code], err: (error as Error).message, retryMs: delayMs };
    if (failing) logger.debug(fields, "status report failed again");
    else logger.warn(fields, "status report failed; retrying (applying config is not affected)");
    failing = true;
    schedule = reportFailed(schedule, now(), delayMs);
  };

  const send = async (report: AppliedReport, key: string): Promise<void> => {
    sequence++;
    try {
      const response = await client.reportAppliedConfig(
        {
          agentId: options.agentId,
          incarnation,
          sequence,
          ...report,
          services: [...report.services],
        },
        { signal: aborted.signal, timeoutMs: options.requestTimeoutMs ?? 10_000 },
      );
      schedule = reportAcknowledged(now(), key, reportIntervalMs(response.reportInterval));
      backoff.reset();
      options.onResult?.("ok");
      if (failing) logger.info("status reports are accepted again");
      failing = false;
    } catch (error) {
      if (aborted.signal.aborted) return;
      failed(error);
    }
  };

  const step = () => {
    clearTimeout(timer);
    timer = undefined;
    if (!started || aborted.signal.aborted || schedule.inFlight) return;
    const report = options.content();
    const key = reportKey(report);
    const decision = decideReport(schedule, now(), key);
    if (!decision.send) {
      if (decision.wakeAt !== undefined) {
        timer = setTimeout(step, Math.max(0, decision.wakeAt - now()));
        timer.unref();
      }
      return;
    }
    schedule = reportSent(schedule);
    inFlight = send(report, key).finally(() => {
      inFlight = undefined;
      step();
    });
  };

  /** Looks at the report once in this turn of the event loop (see `changed`). */
  const lookAgain = () => {
    if (queued || !started) return;
    queued = true;
    setImmediate(() => {
      queued = false;
      step();
    });
  };

  return {
    incarnation,
    start() {
      if (started) return;
      started = true;
      step();
    },
    connected() {
      schedule = registrarMayNotHave(schedule);
      lookAgain();
    },
    changed: lookAgain,
    async stop() {
      aborted.abort();
      clearTimeout(timer);
      await inFlight;
    },
  };
}
