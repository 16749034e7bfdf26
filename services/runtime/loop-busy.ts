/**
 * How busy this process's event loop was over a stretch of time: the
 * fraction of it spent running callbacks rather than waiting for I/O (Node's
 * event loop utilization). A deadline that passes while the loop was nearly
 * always busy says little about the peer that was awaited: its answer may
 * have been sitting unread behind this process's own work, since expired
 * timers run before pending I/O is read.
 */
import { performance } from "node:perf_hooks";

/**
 * Starts measuring the event loop from now. The returned function reports
 * the utilization since this call, from 0 (always idle) to 1 (never idle);
 * it may be read any number of times.
 */
export function measureLoopBusy(): () => number {
  const start = performance.eventLoopUtilization();
  return () => performance.eventLoopUtilization(start).utilization;
}
