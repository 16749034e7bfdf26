/**
 * When the agent sends its status report (`report/report-schedule.ts`):
 * sequences of events through the pure transitions, with the decision after
 * each, and the report interval a response names, clamped. No timers.
 */
import { describe, expect, it } from "vitest";
import {
  decideReport,
  INITIAL_SCHEDULE,
  type ReportSchedule,
  registrarMayNotHave,
  reportAcknowledged,
  reportFailed,
  reportIntervalMs,
  reportSent,
  type ScheduleDecision,
} from "../../clients/agent/report/report-schedule.js";

/** One step: an event at a time with the report's content key, and what is decided after it. */
type Step =
  | { readonly at: number; readonly look: string }
  | { readonly at: number; readonly ok: string; readonly intervalMs: number }
  | { readonly at: number; readonly fail: number }
  | { readonly at: number; readonly connected: true };

/** Runs steps; a `look` that decides to send marks the report sent. Returns the decisions as text. */
function run(steps: readonly Step[]): string[] {
  let state: ReportSchedule = INITIAL_SCHEDULE;
  const shown = (d: ScheduleDecision) => (d.send ? "send" : `wait ${d.wakeAt ?? "flight"}`);
  return steps.map((step) => {
    if ("look" in step) {
      const decision = decideReport(state, step.at, step.look);
      if (decision.send) state = reportSent(state);
      return shown(decision);
    }
    if ("connected" in step) state = registrarMayNotHave(state);
    else if ("ok" in step) state = reportAcknowledged(step.at, step.ok, step.intervalMs);
    else state = reportFailed(state, step.at, step.fail);
    return "";
  });
}

describe("status report schedule", () => {
  it.each([
    {
      name: "the first report goes at once",
      steps: [{ at: 0, look: "a" }],
      decisions: ["send"],
    },
    {
      name: "nothing more while it is in flight; a change meanwhile is sent once after it",
      steps: [
        { at: 0, look: "a" },
        { at: 5, look: "b" },
        { at: 6, look: "c" },
        { at: 10, ok: "a", intervalMs: 1000 },
        { at: 10, look: "c" },
        { at: 20, ok: "c", intervalMs: 1000 },
        { at: 20, look: "c" },
      ],
      decisions: ["send", "wait flight", "wait flight", "", "send", "", "wait 1020"],
    },
    {
      name: "unchanged content waits for the interval since the last response, then goes",
      steps: [
        { at: 0, look: "a" },
        { at: 100, ok: "a", intervalMs: 1000 },
        { at: 500, look: "a" },
        { at: 1099, look: "a" },
        { at: 1100, look: "a" },
      ],
      decisions: ["send", "", "wait 1100", "wait 1100", "send"],
    },
    {
      name: "a change goes at once, before the interval",
      steps: [
        { at: 0, look: "a" },
        { at: 100, ok: "a", intervalMs: 1000 },
        { at: 200, look: "b" },
      ],
      decisions: ["send", "", "send"],
    },
    {
      name: "after a failure nothing goes before the retry time, even a change; then the same content goes again",
      steps: [
        { at: 0, look: "a" },
        { at: 100, ok: "a", intervalMs: 1000 },
        { at: 200, look: "b" },
        { at: 300, fail: 400 },
        { at: 400, look: "c" },
        { at: 699, look: "c" },
        { at: 700, look: "c" },
        { at: 800, fail: 800 },
        { at: 1600, look: "a" },
        { at: 1700, ok: "a", intervalMs: 1000 },
        { at: 1800, look: "a" },
      ],
      decisions: [
        "send",
        "",
        "send",
        "",
        "wait 700",
        "wait 700",
        "send",
        "",
        "send",
        "",
        "wait 2700",
      ],
    },
    {
      name: "a (re)connection sends the unchanged report at once, and ends a retry wait",
      steps: [
        { at: 0, look: "a" },
        { at: 100, ok: "a", intervalMs: 30_000 },
        { at: 200, look: "a" },
        { at: 300, connected: true },
        { at: 300, look: "a" },
        { at: 400, fail: 60_000 },
        { at: 500, look: "a" },
        { at: 600, connected: true },
        { at: 600, look: "a" },
      ],
      decisions: ["send", "", "wait 30100", "", "send", "", "wait 60400", "", "send"],
    },
    {
      name: "a (re)connection while a report is in flight waits for it",
      steps: [
        { at: 0, look: "a" },
        { at: 10, connected: true },
        { at: 20, look: "a" },
        { at: 30, ok: "a", intervalMs: 1000 },
        { at: 40, look: "a" },
      ],
      decisions: ["send", "", "wait flight", "", "wait 1030"],
    },
  ] as const)("$name", ({ steps, decisions }) => {
    expect(run(steps)).toEqual(decisions);
  });

  it.each([
    { name: "none named", interval: undefined, ms: 30_000 },
    { name: "15 s", interval: { seconds: 15n, nanos: 0 }, ms: 15_000 },
    { name: "1.5 s", interval: { seconds: 1n, nanos: 500_000_000 }, ms: 1_500 },
    { name: "zero", interval: { seconds: 0n, nanos: 0 }, ms: 30_000 },
    { name: "negative", interval: { seconds: -5n, nanos: 0 }, ms: 30_000 },
    { name: "10 ms, clamped up", interval: { seconds: 0n, nanos: 10_000_000 }, ms: 1_000 },
    { name: "a day, clamped down", interval: { seconds: 86_400n, nanos: 0 }, ms: 3_600_000 },
  ])("report interval: $name is $ms ms", ({ interval, ms }) => {
    expect(reportIntervalMs(interval)).toBe(ms);
  });
});
