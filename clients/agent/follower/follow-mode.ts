/**
 * How the follower gets config, as a tagged state with a pure transition
 * function. The follower's shell runs the loops, the client calls and the
 * sleeps; it reports what happened as {@link FollowEvent}s and carries out
 * the {@link FollowEffect}s. No timers, no I/O.
 *
 * - A **cycle** runs for one dependency set: `idle` for an empty set,
 *   `poll` when the follower is configured to poll only, `watch` otherwise.
 *   A dependency set change, or a resync (a fresh snapshot wanted), ends the
 *   cycle (`restart-cycle`); the next one starts from the new set.
 * - `watch`: a stream runs (connecting, buffering or live). When it fails
 *   or ends, the follower goes to `backoff` and starts the fallback poller.
 * - `backoff`: the poller runs; the follower waits (`waiting`) before it
 *   retries the stream, then retries it. A successful poll while waiting
 *   wakes the retry at once. A stream that syncs brings the follower back to
 *   `watch` and stops the poller; one that fails again waits again.
 *
 * The observable mode ({@link observedMode}) stays `watch | poll`: `backoff`
 * shows as `poll`, `idle` as the configured mode.
 */
import type { FollowMode } from "../agent-metrics.js";

/** The follower's state; see the module comment. */
export type FollowState =
  /** Nothing to follow: the dependency set is empty (or no cycle started yet). */
  | { readonly kind: "idle" }
  /** Configured to poll only: the poll loop runs. */
  | { readonly kind: "poll" }
  /** A stream runs; no poller. */
  | { readonly kind: "watch" }
  /** The stream is down and the poller runs: waiting to retry the stream, or retrying it. */
  | { readonly kind: "backoff"; readonly waiting: boolean };

/** What the shell reports. */
export type FollowEvent =
  /** A cycle starts for a dependency set of `services` services. */
  | { readonly type: "cycle"; readonly services: number; readonly configured: FollowMode }
  /** The stream reached SYNCED. */
  | { readonly type: "stream-synced" }
  /** The stream failed, went silent or was ended by the registrar (not cancelled). */
  | { readonly type: "stream-down" }
  /** The wait before retrying the stream is over (its time elapsed, or it was woken). */
  | { readonly type: "retry" }
  /** A poll applied a complete listing. */
  | { readonly type: "poll-succeeded" }
  /** The dependency set changed. */
  | { readonly type: "services-changed" }
  /**
   * A fresh snapshot of the same dependency set is wanted (the origins' keys
   * changed: what was refused may pass now, and a resumed stream would not
   * send it again).
   */
  | { readonly type: "resync" };

/** What the shell is asked to do, in order. */
export type FollowEffect =
  /** Start the fallback poller. */
  | { readonly type: "start-poller" }
  /** Stop the fallback poller. */
  | { readonly type: "stop-poller" }
  /** Start the reconnect backoff over from its first delay. */
  | { readonly type: "reset-backoff" }
  /** End the wait before retrying the stream now. */
  | { readonly type: "wake-reconnect" }
  /** End the current cycle (cancelling its stream and polls); the next one starts. */
  | { readonly type: "restart-cycle" };

/** The outcome of {@link transition}. */
export interface FollowTransition {
  /** The next state. */
  readonly state: FollowState;
  /** What to do, in order. */
  readonly effects: readonly FollowEffect[];
}

/** The state before the first cycle. */
export const INITIAL_FOLLOW_STATE: FollowState = { kind: "idle" };

const IDLE: FollowState = INITIAL_FOLLOW_STATE;
const POLL: FollowState = { kind: "poll" };
const WATCH: FollowState = { kind: "watch" };
const WAITING: FollowState = { kind: "backoff", waiting: true };
const RETRYING: FollowState = { kind: "backoff", waiting: false };

const to = (state: FollowState, ...effects: FollowEffect[]): FollowTransition => ({
  state,
  effects,
});

/**
 * The next state and effects for one event. An event that cannot happen in
 * a state (a synced stream while polling only, say) leaves it unchanged.
 */
export function transition(state: FollowState, event: FollowEvent): FollowTransition {
  switch (event.type) {
    case "cycle":
      if (event.services === 0) return to(IDLE);
      return to(event.configured === "poll" ? POLL : WATCH);
    case "services-changed":
    case "resync":
      return to(state, { type: "restart-cycle" });
    case "stream-synced":
      if (state.kind === "backoff") {
        return to(WATCH, { type: "reset-backoff" }, { type: "stop-poller" });
      }
      return state.kind === "watch" ? to(WATCH, { type: "reset-backoff" }) : to(state);
    case "stream-down":
      if (state.kind === "watch") return to(WAITING, { type: "start-poller" });
      return state.kind === "backoff" ? to(WAITING) : to(state);
    case "retry":
      return state.kind === "backoff" ? to(RETRYING) : to(state);
    case "poll-succeeded":
      return state.kind === "backoff" && state.waiting
        ? to(state, { type: "wake-reconnect" })
        : to(state);
  }
}

/** The mode a state shows as (metrics, `mode` getters): `idle` shows as `configured`. */
export function observedMode(state: FollowState, configured: FollowMode): FollowMode {
  switch (state.kind) {
    case "idle":
      return configured;
    case "watch":
      return "watch";
    case "poll":
    case "backoff":
      return "poll";
  }
}
