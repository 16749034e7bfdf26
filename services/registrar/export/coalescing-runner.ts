/**
 * The coalescing runner: runs one task (the export reconcile) whenever it is
 * asked to, never two at once, and coalesces the asks that arrive meanwhile.
 *
 * - An ask schedules a run after a debounce, postponed by later asks but
 *   never past a maximum delay after the first.
 * - Asks during a run cause exactly one more run after it.
 * - A run that reports a retry delay is run again after it; asks while the
 *   retry is pending do nothing (the retry does what they asked anyway).
 * - A reset (a new leadership term, or stop) cancels all of that; a run under
 *   way goes on, but nothing follows it unless asked anew.
 *
 * All of it is one tagged state ({@link RunnerState}) and a pure transition
 * function ({@link nextRunnerState}) that returns the next state and the
 * effects to carry out; {@link createCoalescingRunner} is the thin shell that
 * owns the state's timers (the state object holds its own, the way
 * connect-es's Http2SessionManager does) and starts the runs.
 */

/**
 * What the runner is doing, apart from its timers: `idle`; `scheduled` (a
 * run is due at `due`, for asks since `firstPendingAt`, both in epoch
 * milliseconds); `running` (and `again` when it must run once more after);
 * `backoff` (a retry is pending).
 */
export type RunnerState =
  | { readonly kind: "idle" }
  | { readonly kind: "scheduled"; readonly due: number; readonly firstPendingAt: number }
  | { readonly kind: "running"; readonly again: boolean }
  | { readonly kind: "backoff" };

/**
 * What happens to the runner: `request` (a run is asked for `delayMs` from
 * now), `timer` (the timer of the `scheduled` or `backoff` state fired),
 * `finished` (the run ended, asking for a retry after `retryInMs`, or not),
 * `reset` (cancel everything; then, when active, schedule a run at once).
 */
export type RunnerEvent =
  | { readonly type: "request"; readonly delayMs: number }
  | { readonly type: "timer" }
  | { readonly type: "finished"; readonly retryInMs: number | undefined }
  | { readonly type: "reset" };

/** What a transition knows besides the state and the event. */
export interface RunnerContext {
  /** The current time, in epoch milliseconds. */
  readonly now: number;
  /** Whether runs may be scheduled and started now (for the controller: leader and started). */
  readonly active: boolean;
  /** How long an ask waits for more, in milliseconds. */
  readonly debounceMs: number;
  /** The longest asks can postpone a run after the first, in milliseconds. */
  readonly maxDelayMs: number;
}

/**
 * What the shell must do after a transition, in this order: `disarm` (clear
 * the timer of the state left), `arm` (start the timer of the state entered,
 * `delayMs` from now), `run` (start a run), `settle` (the runner became
 * idle: resolve whoever waits for that).
 */
export type RunnerEffect =
  | { readonly type: "disarm" }
  | { readonly type: "arm"; readonly delayMs: number }
  | { readonly type: "run" }
  | { readonly type: "settle" };

/** The outcome of {@link nextRunnerState}. */
export interface RunnerTransition {
  /** The next state; the very same object when nothing changed. */
  readonly state: RunnerState;
  /** The effects to carry out; empty when nothing changed. */
  readonly effects: readonly RunnerEffect[];
}

const IDLE: RunnerState & { readonly kind: "idle" } = { kind: "idle" };
const RUN: RunnerEffect = { type: "run" };
const DISARM: RunnerEffect = { type: "disarm" };
const SETTLE: RunnerEffect = { type: "settle" };

/**
 * The runner's transition function: the state after `event` in `state`, and
 * the effects that takes. Pure. Every transition into `idle` from another
 * state settles; a state with a timer is always left with `disarm` unless
 * its timer fired, and entered with `arm`.
 */
export function nextRunnerState(
  state: RunnerState,
  event: RunnerEvent,
  context: RunnerContext,
): RunnerTransition {
  const next = decide(state, event, context);
  if (next.state.kind === "idle" && state.kind !== "idle") {
    return { state: next.state, effects: [...next.effects, SETTLE] };
  }
  return next;
}

/** {@link nextRunnerState} before settling. */
function decide(state: RunnerState, event: RunnerEvent, context: RunnerContext): RunnerTransition {
  switch (event.type) {
    case "request":
      return request(state, event.delayMs, context);
    case "timer":
      if (state.kind === "scheduled") {
        return context.active
          ? { state: { kind: "running", again: false }, effects: [RUN] }
          : { state: IDLE, effects: [] };
      }
      // The retry is due: it runs at once, reading the latest snapshot.
      if (state.kind === "backoff") return request(IDLE, 0, context);
      return { state, effects: [] }; // a timer of a state already left
    case "finished":
      if (state.kind !== "running") return { state, effects: [] };
      // A retry replaces the run to follow, which it would repeat anyway.
      if (event.retryInMs !== undefined && context.active) {
        return { state: { kind: "backoff" }, effects: [{ type: "arm", delayMs: event.retryInMs }] };
      }
      return state.again
        ? request(IDLE, context.debounceMs, context)
        : { state: IDLE, effects: [] };
    case "reset": {
      // A run under way goes on; it is followed by one for the new term, if any.
      if (state.kind === "running") {
        if (state.again === context.active) return { state, effects: [] };
        return { state: { kind: "running", again: context.active }, effects: [] };
      }
      const restarted = request(IDLE, 0, context);
      if (state.kind === "idle") {
        return restarted.state === IDLE ? { state, effects: [] } : restarted;
      }
      return { state: restarted.state, effects: [DISARM, ...restarted.effects] };
    }
  }
}

/**
 * A run asked for `delayMs` from now: scheduled (debounced, but never past
 * `maxDelayMs` after the first ask), or once more after the running one.
 * Nothing while not active or while a retry is pending.
 */
function request(state: RunnerState, delayMs: number, context: RunnerContext): RunnerTransition {
  if (!context.active || state.kind === "backoff") return { state, effects: [] };
  if (state.kind === "running") {
    return state.again
      ? { state, effects: [] }
      : { state: { kind: "running", again: true }, effects: [] };
  }
  const { now, maxDelayMs } = context;
  const firstPendingAt = state.kind === "scheduled" ? state.firstPendingAt : now;
  const due = Math.min(now + delayMs, firstPendingAt + maxDelayMs);
  const arm: RunnerEffect = { type: "arm", delayMs: Math.max(0, due - now) };
  return {
    state: { kind: "scheduled", due, firstPendingAt },
    effects: state.kind === "scheduled" ? [DISARM, arm] : [arm],
  };
}

/** Options of {@link createCoalescingRunner}. */
export interface CoalescingRunnerOptions {
  /**
   * Runs the task once; resolves with the delay before a retry in
   * milliseconds, or undefined when none is due. Must not reject (a
   * rejection counts as undefined).
   */
  readonly run: () => Promise<number | undefined>;
  /** Whether runs may be scheduled and started now; asked at every event. */
  readonly active: () => boolean;
  /** How long an ask waits for more, in milliseconds. */
  readonly debounceMs: number;
  /** The longest asks can postpone a run after the first, in milliseconds. */
  readonly maxDelayMs: number;
}

/** A coalescing runner; see the module comment. */
export interface CoalescingRunner {
  /**
   * Asks for a run `delayMs` from now (default the debounce); see
   * {@link RunnerEvent}. Does nothing while not active or while a retry is
   * pending.
   */
  request(delayMs?: number): void;
  /**
   * Cancels what is scheduled, a pending retry and a pending run after the
   * current one; then, when active, schedules a run at once. A run under way
   * goes on.
   */
  reset(): void;
  /** The run under way, resolved once it has ended and its outcome is handled; else undefined. */
  readonly running: Promise<void> | undefined;
  /**
   * Resolves once nothing is scheduled, running, to run again or waiting
   * for a retry (at once when nothing is).
   */
  whenIdle(): Promise<void>;
}

/** A {@link RunnerState} whose waiting kinds own their timer. */
type TimedState<S extends RunnerState = RunnerState> = S extends {
  readonly kind: "scheduled" | "backoff";
}
  ? S & { readonly timer: NodeJS.Timeout }
  : S;

/** Creates a coalescing runner, idle; it runs nothing until asked. */
export function createCoalescingRunner(options: CoalescingRunnerOptions): CoalescingRunner {
  const { debounceMs, maxDelayMs } = options;
  let state: TimedState = IDLE;
  let running: Promise<void> | undefined;
  let waiters: (() => void)[] = [];

  const dispatch = (event: RunnerEvent): void => {
    const context = { now: Date.now(), active: options.active(), debounceMs, maxDelayMs };
    const transition = nextRunnerState(state, event, context);
    let timer = "timer" in state ? state.timer : undefined;
    for (const effect of transition.effects) {
      if (effect.type === "disarm") {
        clearTimeout(timer);
        timer = undefined;
      } else if (effect.type === "arm") {
        timer = arm(effect.delayMs);
      }
    }
    state = withTimer(transition.state, timer);
    for (const effect of transition.effects) {
      if (effect.type === "run") start();
      else if (effect.type === "settle") settle();
    }
  };

  const arm = (delayMs: number): NodeJS.Timeout => {
    const timer = setTimeout(() => {
      // Only the timer the current state owns may fire it.
      if ("timer" in state && state.timer === timer) dispatch({ type: "timer" });
    }, delayMs);
    return timer;
  };

  const start = (): void => {
    const finish = (retryInMs: number | undefined): void => {
      running = undefined;
      dispatch({ type: "finished", retryInMs });
    };
    running = options.run().then(finish, () => finish(undefined));
  };

  const settle = (): void => {
    const resolved = waiters;
    waiters = [];
    for (const resolve of resolved) resolve();
  };

  return {
    request(delayMs = debounceMs) {
      dispatch({ type: "request", delayMs });
    },
    reset() {
      dispatch({ type: "reset" });
    },
    get running() {
      return running;
    },
    whenIdle() {
      if (state.kind === "idle") return Promise.resolve();
      return new Promise((resolve) => waiters.push(resolve));
    },
  };
}

/** `state` with `timer` when its kind waits on one (which it then must have). */
function withTimer(state: RunnerState, timer: NodeJS.Timeout | undefined): TimedState {
  if (state.kind !== "scheduled" && state.kind !== "backoff") return state;
  if (timer === undefined) throw new Error(`coalescing runner: ${state.kind} without a timer`);
  return { ...state, timer };
}
