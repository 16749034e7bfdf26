/**
 * When the agent sends its report (see `status-reporter.ts`, the shell that
 * owns the timer and the call): as a state and pure transitions, no timers.
 *
 * - At most one report is in flight; what changes meanwhile is looked at
 *   when it ends, so a burst of changes is sent once after it (coalesced).
 * - A report is sent when its content differs from the one the registrar
 *   last acknowledged, and, unchanged, once the report interval since the
 *   last response has passed.
 * - A (re)connection to a registrar sends it again at once: a restarted
 *   registrar, or another replica, knows nothing of this agent yet.
 * - After a failure nothing is sent before the retry time the shell chose
 *   (a jittered backoff, or a long wait for a registrar that does not
 *   implement reports); then the report is sent whatever its content, since
 *   the registrar may not have it.
 */

/** The default report interval when the registrar names none (or a bad one): 30 seconds. */
export const DEFAULT_REPORT_INTERVAL_MS = 30_000;
/** The shortest report interval the agent follows. */
export const MIN_REPORT_INTERVAL_MS = 1_000;
/** The longest report interval the agent follows. */
export const MAX_REPORT_INTERVAL_MS = 3_600_000;

/** The schedule's state. */
export interface ReportSchedule {
  /** Whether a report is in flight. */
  readonly inFlight: boolean;
  /** The content key the registrar last acknowledged; undefined before one, or after a failure. */
  readonly acked: string | undefined;
  /** When an unchanged report is due, in milliseconds since the epoch. */
  readonly dueAt: number;
  /** After a failure, the earliest time of the next attempt; undefined otherwise. */
  readonly retryAt: number | undefined;
}

/** The state before the first report: one is due at once. */
export const INITIAL_SCHEDULE: ReportSchedule = {
  inFlight: false,
  acked: undefined,
  dueAt: 0,
  retryAt: undefined,
};

/** What to do now. */
export type ScheduleDecision =
  | { readonly send: true }
  /** Nothing now; look again at `wakeAt` (undefined: when the report in flight ends). */
  | { readonly send: false; readonly wakeAt: number | undefined };

/** Decides whether to send the report whose content key is `key` at `now`. */
export function decideReport(state: ReportSchedule, now: number, key: string): ScheduleDecision {
  if (state.inFlight) return { send: false, wakeAt: undefined };
  if (state.retryAt !== undefined) {
    return now >= state.retryAt ? { send: true } : { send: false, wakeAt: state.retryAt };
  }
  if (key !== state.acked || now >= state.dueAt) return { send: true };
  return { send: false, wakeAt: state.dueAt };
}

/** The state once a report was sent. */
export function reportSent(state: ReportSchedule): ReportSchedule {
  return { ...state, inFlight: true };
}

/** The state once the registrar acknowledged, at `now`, the report of content `key`, naming `intervalMs`. */
export function reportAcknowledged(now: number, key: string, intervalMs: number): ReportSchedule {
  return { inFlight: false, acked: key, dueAt: now + intervalMs, retryAt: undefined };
}

/**
 * The state once the agent (re)connected to a registrar (a stream reached
 * SYNCED): a registrar that restarted, or another replica, may not have the
 * last report, so it is sent again at once, unchanged or not, and a retry
 * wait ends (the registrar answers again). A report in flight stays so.
 */
export function registrarMayNotHave(state: ReportSchedule): ReportSchedule {
  return { ...state, acked: undefined, retryAt: undefined };
}

/** The state once the report failed at `now`, to be tried again `delayMs` later. */
export function reportFailed(state: ReportSchedule, now: number, delayMs: number): ReportSchedule {
  return { inFlight: false, acked: undefined, dueAt: state.dueAt, retryAt: now + delayMs };
}

/**
 * The report interval a response names, in milliseconds: its
 * `report_interval`, clamped to 1 s to 1 h; 30 s when it names none or
 * one that is not positive.
 */
export function reportIntervalMs(
  interval: { readonly seconds: bigint; readonly nanos: number } | undefined,
): number {
  if (interval === undefined) return DEFAULT_REPORT_INTERVAL_MS;
  const ms = Number(interval.seconds) * 1000 + Math.floor(interval.nanos / 1_000_000);
  if (!Number.isFinite(ms) || ms <= 0) return DEFAULT_REPORT_INTERVAL_MS;
  return Math.min(MAX_REPORT_INTERVAL_MS, Math.max(MIN_REPORT_INTERVAL_MS, ms));
}
