/**
 * What a failed store ping means for the config cache. Declaring the store
 * lost closes every agent's watch stream, so it must mean the store is gone,
 * not that it is briefly busy: a cluster electing a new leader (its leader
 * crashed or froze) answers no linearizable request for an election timeout
 * or two, and the process itself may have been too busy to read the answer
 * (starvation-grace.ts). A failed ping is therefore excused (pinged again at
 * once) while the process was starved, pinged again shortly while the pings
 * have been failing for less than `lossAfterMs`, and counts (the store is
 * lost) after that. Synchronous and free of I/O.
 */
import {
  DEFAULT_STARVATION_GRACE,
  judgeMissedDeadline,
  type StarvationGrace,
} from "../store/starvation-grace.js";

/** How long pings may keep failing before the store counts as lost, in milliseconds. */
export const DEFAULT_PING_LOSS_AFTER_MS = 3_000;

/** A failed ping: how busy the loop was over it, and how long pings have been failing. */
export interface FailedPing {
  /** The event loop utilization over the ping, 0 to 1. */
  readonly busy: number;
  /** The failures excused as starvation in a row just before this one. */
  readonly excused: number;
  /** The time since the first failure of this run of failures (0 for the first), in milliseconds. */
  readonly failingForMs: number;
}

/**
 * `"excuse"` (ping again at once, the process was starved; see
 * `judgeMissedDeadline`), `"retry"` (ping again shortly: the pings have been
 * failing for less than `lossAfterMs`) or `"lost"`.
 */
export function judgeFailedPing(
  ping: FailedPing,
  lossAfterMs: number = DEFAULT_PING_LOSS_AFTER_MS,
  grace: StarvationGrace = DEFAULT_STARVATION_GRACE,
): "excuse" | "retry" | "lost" {
  if (judgeMissedDeadline({ busy: ping.busy, excused: ping.excused }, grace) === "excuse") {
    return "excuse";
  }
  return ping.failingForMs < lossAfterMs ? "retry" : "lost";
}
