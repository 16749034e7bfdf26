/**
 * One refresh at a time: `trigger()` starts `run` when none is in flight,
 * and otherwise remembers that one more is wanted, started once the current
 * one settles (however many triggers came meanwhile). No timers: the caller
 * decides when to trigger.
 */

/** A single-flight runner. */
export interface SingleFlight {
  /** Runs now, or once after the run in flight. */
  trigger(): void;
  /** Stops: no run starts after this (one in flight still settles). */
  stop(): void;
  /** Whether a run is in flight. */
  busy(): boolean;
}

/** A single-flight runner of `run` (its rejections are the caller's to catch inside `run`). */
export function singleFlight(run: () => Promise<void>): SingleFlight {
  let inFlight = false;
  let again = false;
  let stopped = false;
  const start = (): void => {
    if (stopped) return;
    inFlight = true;
    again = false;
    void run()
      .catch(() => {})
      .finally(() => {
        inFlight = false;
        if (again) start();
      });
  };
  return {
    trigger() {
      if (inFlight) again = true;
      else start();
    },
    stop() {
      stopped = true;
    },
    busy: () => inFlight,
  };
}
