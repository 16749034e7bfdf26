/**
 * The coalescing runner's transition function, state by event: every state
 * (idle, scheduled, running, running with a run to follow, backoff) under
 * every event (request, timer, finished with and without a retry, reset),
 * active and not. Then a few event sequences: debounce, the maximum delay,
 * one more run after the running one, retries. Pure: no timers.
 */
import { describe, expect, it } from "vitest";
import {
  nextRunnerState,
  type RunnerContext,
  type RunnerEffect,
  type RunnerEvent,
  type RunnerState,
} from "../../services/registrar/export/coalescing-runner.js";

const NOW = 10_000;
const DEBOUNCE = 50;
const MAX_DELAY = 1_000;

const context = (active: boolean, now = NOW): RunnerContext => ({
  now,
  active,
  debounceMs: DEBOUNCE,
  maxDelayMs: MAX_DELAY,
});

const idle: RunnerState = { kind: "idle" };
/** Scheduled for the debounce after an ask, the first of them 200 ms ago. */
const scheduled: RunnerState = { kind: "scheduled", due: NOW + 30, firstPendingAt: NOW - 200 };
const running: RunnerState = { kind: "running", again: false };
const runningAgain: RunnerState = { kind: "running", again: true };
const backoff: RunnerState = { kind: "backoff" };

const states: Record<string, RunnerState> = { idle, scheduled, running, runningAgain, backoff };

const events: Record<string, RunnerEvent> = {
  change: { type: "request", delayMs: DEBOUNCE },
  now: { type: "request", delayMs: 0 },
  timer: { type: "timer" },
  done: { type: "finished", retryInMs: undefined },
  failed: { type: "finished", retryInMs: 300 },
  reset: { type: "reset" },
};

const arm = (delayMs: number): RunnerEffect => ({ type: "arm", delayMs });
const disarm: RunnerEffect = { type: "disarm" };
const run: RunnerEffect = { type: "run" };
const settle: RunnerEffect = { type: "settle" };

/** A run scheduled `delayMs` from now by a first ask now. */
const fresh = (delayMs: number): RunnerState => ({
  kind: "scheduled",
  due: NOW + delayMs,
  firstPendingAt: NOW,
});

/** `same`: the very state given, and no effects. */
type Expected = "same" | readonly [RunnerState, readonly RunnerEffect[]];

/** Every state × event, active (leader, started) and not: [state, event, active, expected]. */
const table: [keyof typeof states, keyof typeof events, boolean, Expected][] = [
  // idle
  ["idle", "change", true, [fresh(DEBOUNCE), [arm(DEBOUNCE)]]],
  ["idle", "change", false, "same"],
  ["idle", "now", true, [fresh(0), [arm(0)]]],
  ["idle", "now", false, "same"],
  ["idle", "timer", true, "same"],
  ["idle", "timer", false, "same"],
  ["idle", "done", true, "same"],
  ["idle", "done", false, "same"],
  ["idle", "failed", true, "same"],
  ["idle", "failed", false, "same"],
  ["idle", "reset", true, [fresh(0), [arm(0)]]],
  ["idle", "reset", false, "same"],
  // scheduled: postponed by asks, never past the maximum delay after the first
  [
    "scheduled",
    "change",
    true,
    [
      { kind: "scheduled", due: NOW + DEBOUNCE, firstPendingAt: NOW - 200 },
      [disarm, arm(DEBOUNCE)],
    ],
  ],
  ["scheduled", "change", false, "same"],
  [
    "scheduled",
    "now",
    true,
    [{ kind: "scheduled", due: NOW, firstPendingAt: NOW - 200 }, [disarm, arm(0)]],
  ],
  ["scheduled", "now", false, "same"],
  ["scheduled", "timer", true, [running, [run]]],
  ["scheduled", "timer", false, [idle, [settle]]],
  ["scheduled", "done", true, "same"],
  ["scheduled", "done", false, "same"],
  ["scheduled", "failed", true, "same"],
  ["scheduled", "failed", false, "same"],
  ["scheduled", "reset", true, [fresh(0), [disarm, arm(0)]]],
  ["scheduled", "reset", false, [idle, [disarm, settle]]],
  // running: asks make it run once more after; a reset forgets that
  ["running", "change", true, [runningAgain, []]],
  ["running", "change", false, "same"],
  ["running", "now", true, [runningAgain, []]],
  ["running", "now", false, "same"],
  ["running", "timer", true, "same"],
  ["running", "timer", false, "same"],
  ["running", "done", true, [idle, [settle]]],
  ["running", "done", false, [idle, [settle]]],
  ["running", "failed", true, [backoff, [arm(300)]]],
  ["running", "failed", false, [idle, [settle]]],
  ["running", "reset", true, [runningAgain, []]],
  ["running", "reset", false, "same"],
  // running, to run again: the run after it is debounced from when it ends
  ["runningAgain", "change", true, "same"],
  ["runningAgain", "change", false, "same"],
  ["runningAgain", "now", true, "same"],
  ["runningAgain", "now", false, "same"],
  ["runningAgain", "timer", true, "same"],
  ["runningAgain", "timer", false, "same"],
  ["runningAgain", "done", true, [fresh(DEBOUNCE), [arm(DEBOUNCE)]]],
  ["runningAgain", "done", false, [idle, [settle]]],
  ["runningAgain", "failed", true, [backoff, [arm(300)]]],
  ["runningAgain", "failed", false, [idle, [settle]]],
  ["runningAgain", "reset", true, [runningAgain, []]],
  ["runningAgain", "reset", false, [running, []]],
  // backoff: asks do nothing (the retry reads the latest anyway); the retry runs at once
  ["backoff", "change", true, "same"],
  ["backoff", "change", false, "same"],
  ["backoff", "now", true, "same"],
  ["backoff", "now", false, "same"],
  ["backoff", "timer", true, [fresh(0), [arm(0)]]],
  ["backoff", "timer", false, [idle, [settle]]],
  ["backoff", "done", true, "same"],
  ["backoff", "done", false, "same"],
  ["backoff", "failed", true, "same"],
  ["backoff", "failed", false, "same"],
  ["backoff", "reset", true, [fresh(0), [disarm, arm(0)]]],
  ["backoff", "reset", false, [idle, [disarm, settle]]],
];

describe("coalescing runner: every state × event", () => {
  it("the table covers every state, event and activity once", () => {
    const keys = new Set(table.map(([s, e, a]) => `${s} ${e} ${a}`));
    expect(keys.size).toBe(table.length);
    expect(table.length).toBe(Object.keys(states).length * Object.keys(events).length * 2);
  });

  for (const [stateName, eventName, active, expected] of table) {
    const title = `${stateName} + ${eventName}${active ? "" : " (not active)"}`;
    it(`${title} → ${expected === "same" ? "unchanged" : expected[0].kind}`, () => {
      const state = states[stateName] as RunnerState;
      const next = nextRunnerState(state, events[eventName] as RunnerEvent, context(active));
      if (expected === "same") {
        expect(next.state).toBe(state);
        expect(next.effects).toEqual([]);
      } else {
        expect(next.state).toEqual(expected[0]);
        expect(next.effects).toEqual(expected[1]);
      }
    });
  }
});

/**
 * Applies `steps` (an event at a time, active unless said) from `start`,
 * returning each step's state and effects.
 */
function replay(
  start: RunnerState,
  steps: readonly (readonly [number, RunnerEvent] | readonly [number, RunnerEvent, false])[],
): { state: RunnerState; effects: readonly RunnerEffect[] }[] {
  let state = start;
  return steps.map(([now, event, active]) => {
    const next = nextRunnerState(state, event, context(active ?? true, now));
    state = next.state;
    return next;
  });
}

describe("coalescing runner: sequences", () => {
  const change = events.change as RunnerEvent;
  const timer = events.timer as RunnerEvent;
  const done = events.done as RunnerEvent;

  it("a burst is debounced: each ask postpones the run to the debounce after it", () => {
    const steps = replay(idle, [
      [0, change],
      [20, change],
      [40, change],
      [90, timer],
    ]);
    expect(steps.map((s) => s.effects)).toEqual([
      [arm(50)],
      [disarm, arm(50)],
      [disarm, arm(50)],
      [run],
    ]);
    expect(steps[2]?.state).toEqual({ kind: "scheduled", due: 90, firstPendingAt: 0 });
  });

  it("a steady stream of asks never postpones the run past the maximum delay after the first", () => {
    const asks = Array.from({ length: 30 }, (_, i) => [i * 40, change] as const);
    const steps = replay(idle, asks);
    const dues = steps.map((s) => (s.state.kind === "scheduled" ? s.state.due : undefined));
    expect(Math.max(...(dues as number[]))).toBe(MAX_DELAY);
    expect(steps.at(-1)?.effects).toEqual([disarm, arm(0)]); // at 1160: already due
    expect(steps.at(-1)?.state).toEqual({ kind: "scheduled", due: MAX_DELAY, firstPendingAt: 0 });
  });

  it("asks during a run cause exactly one more run, debounced from its end", () => {
    const steps = replay(idle, [
      [0, change],
      [50, timer],
      [60, change],
      [70, change],
      [80, change],
      [500, done],
      [550, timer],
      [900, done],
    ]);
    expect(steps.map((s) => s.state.kind)).toEqual([
      "scheduled",
      "running",
      "running",
      "running",
      "running",
      "scheduled",
      "running",
      "idle",
    ]);
    expect(steps.filter((s) => s.effects.some((e) => e.type === "run"))).toHaveLength(2);
    expect(steps[5]).toEqual({
      state: { kind: "scheduled", due: 550, firstPendingAt: 500 },
      effects: [arm(50)],
    });
    expect(steps[7]?.effects).toEqual([settle]);
  });

  it("a failed run is retried after its delay, at once, ignoring asks meanwhile; a success settles", () => {
    const steps = replay(idle, [
      [0, { type: "request", delayMs: 0 }],
      [0, timer],
      [10, { type: "finished", retryInMs: 100 }],
      [20, change],
      [110, timer],
      [110, timer],
      [120, { type: "finished", retryInMs: 200 }],
      [320, timer],
      [320, timer],
      [330, done],
    ]);
    expect(steps.map((s) => s.state.kind)).toEqual([
      "scheduled",
      "running",
      "backoff",
      "backoff",
      "scheduled",
      "running",
      "backoff",
      "scheduled",
      "running",
      "idle",
    ]);
    expect(steps.map((s) => s.effects)).toEqual([
      [arm(0)],
      [run],
      [arm(100)],
      [],
      [arm(0)],
      [run],
      [arm(200)],
      [arm(0)],
      [run],
      [settle],
    ]);
  });

  it("losing the leadership cancels everything; a run under way is not followed by another", () => {
    const steps = replay(idle, [
      [0, change],
      [50, timer],
      [60, change],
      [70, { type: "reset" }, false],
      [80, change, false],
      [200, done, false],
    ]);
    expect(steps.map((s) => s.state)).toEqual([
      { kind: "scheduled", due: 50, firstPendingAt: 0 },
      running,
      runningAgain,
      running,
      running,
      idle,
    ]);
    expect(steps.at(-1)?.effects).toEqual([settle]);
  });
});
