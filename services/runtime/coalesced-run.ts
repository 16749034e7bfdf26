/**
 * One async task run at a time, with at most one more run queued behind it:
 * a call while it runs asks for one more run after it (any number of such
 * calls ask for one), so a burst of triggers (file events, timer ticks)
 * costs at most two runs and the last trigger is always followed by a run.
 */

/**
 * Returns a trigger for `task`; see the module comment. No run starts, and
 * no queued run follows, once `stopped()` is true. The trigger's promise
 * settles when the runs it started are done (at once for a queued call);
 * it rejects only when `task` does.
 */
export function coalescedRun(
  task: () => Promise<void>,
  stopped: () => boolean,
): () => Promise<void> {
  let busy = false;
  let again = false;
  return async () => {
    if (stopped()) return;
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      do {
        again = false;
        await task();
      } while (again && !stopped());
    } finally {
      busy = false;
    }
  };
}
