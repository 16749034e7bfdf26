/**
 * When the `dir:PATH` source rescans: after a debounced burst of changes
 * (quiet for `debounceMs`, but never later than ten times that after the
 * first change of the burst), one rescan at a time, with every change
 * reported meanwhile gathered into the next. A change reported in a
 * directory rescans that directory only; polling, the periodic resync and a
 * failed watch rescan every directory. Until the first scan is done a change
 * only marks that another scan is due, right after it.
 */
import type { Logger } from "../runtime/logger.js";

/** What a rescan must list again: every directory, or the dirty ones. */
export interface PendingScan {
  /** List every directory (the first scan, polling, a resync, a failed watch). */
  full: boolean;
  /** List these directories (a watch reported a change in them). */
  readonly dirty: Set<string>;
}

/**
 * How long to wait before the rescan of a burst of changes whose first
 * change came at `firstPendingAt` (and whose latest at `now`): `debounceMs`
 * of quiet, but never past ten times `debounceMs` after the first change,
 * and never negative. Pure.
 */
export function debounceDelay(now: number, firstPendingAt: number, debounceMs: number): number {
  return Math.max(0, Math.min(debounceMs, firstPendingAt + debounceMs * 10 - now));
}

/** Options of {@link createScanScheduler}. */
export interface ScanSchedulerOptions {
  /** How long changes must be quiet before a rescan, in milliseconds. */
  readonly debounceMs: number;
  /** Poll from the start (the source does not watch). */
  readonly poll: boolean;
  /** The rescan period when polling, in milliseconds. */
  readonly pollIntervalMs: number;
  /** The period of the full rescan run even while watching, in milliseconds (0: none). */
  readonly resyncIntervalMs: number;
  /** Where a failed rescan is logged. */
  readonly logger: Logger;
  /** Rescans what `work` says; the scheduler never runs two at once. */
  scan(work: PendingScan): Promise<void>;
}

/** See {@link createScanScheduler}. */
export interface ScanScheduler {
  /**
   * Runs the first scan (of every directory) now, after starting the poll
   * timer (when polling) and the resync timer; once it is done, unless
   * stopped meanwhile, calls `synced` and then runs (debounced) the rescan
   * of any change requested during it. Rejects, and calls nothing, when the
   * first scan does.
   */
  start(synced: () => void): Promise<void>;
  /**
   * Requests a rescan of `directory` (of every directory when undefined),
   * debounced; nothing after {@link ScanScheduler.stop}.
   */
  request(directory?: string): void;
  /** Starts polling every `pollIntervalMs` (a directory cannot be watched); idempotent. */
  startPolling(): void;
  /** True while polling. */
  readonly polling: boolean;
  /** Stops the timers and further rescans; resolves once a rescan in progress has settled. */
  stop(): Promise<void>;
}

/** Creates the rescan scheduler of a directory source (see the module comment). */
export function createScanScheduler(options: ScanSchedulerOptions): ScanScheduler {
  const { debounceMs, logger } = options;
  /** What the next rescan must look at again. */
  let pending: PendingScan = { full: false, dirty: new Set() };
  let stopped = false;
  /** Whether the first scan is done (and the source synced). */
  let ready = false;
  let pollTimer: NodeJS.Timeout | undefined;
  let resyncTimer: NodeJS.Timeout | undefined;
  let debounceTimer: NodeJS.Timeout | undefined;
  let firstPendingAt: number | undefined;
  let scanning: Promise<void> | undefined;
  let scanAgain = false;

  /** Runs a rescan now, or once more after the one in progress. */
  const runScan = () => {
    debounceTimer = undefined;
    firstPendingAt = undefined;
    if (stopped) return;
    if (scanning !== undefined) {
      scanAgain = true;
      return;
    }
    const work = pending;
    pending = { full: false, dirty: new Set() };
    scanning = options
      .scan(work)
      .catch((error: unknown) => logger.error({ err: error }, "rescan failed"))
      .finally(() => {
        scanning = undefined;
        if (scanAgain && !stopped) {
          scanAgain = false;
          arm();
        }
      });
  };

  /**
   * Debounces a rescan of `directory` (of every directory when undefined):
   * quiet for `debounceMs`, but never later than ten times that.
   */
  const schedule = (directory?: string) => {
    if (stopped) return;
    if (directory === undefined) pending.full = true;
    else pending.dirty.add(directory);
    arm();
  };

  /** Starts (or pushes back) the debounce timer of the pending rescan. */
  const arm = () => {
    if (stopped) return;
    if (!ready) {
      scanAgain = true; // the first scan is running; scan again right after it
      return;
    }
    const now = Date.now();
    firstPendingAt ??= now;
    if (debounceTimer !== undefined) clearTimeout(debounceTimer);
    debounceTimer = setTimeout(runScan, debounceDelay(now, firstPendingAt, debounceMs));
  };

  const startPolling = () => {
    if (pollTimer === undefined && !stopped) {
      pollTimer = setInterval(() => schedule(), options.pollIntervalMs);
    }
  };

  return {
    async start(synced) {
      if (options.poll) startPolling();
      if (options.resyncIntervalMs > 0) {
        resyncTimer = setInterval(() => schedule(), options.resyncIntervalMs);
      }
      scanning = options.scan({ full: true, dirty: new Set() });
      await scanning;
      scanning = undefined;
      if (stopped) return;
      ready = true;
      synced();
      if (scanAgain) {
        scanAgain = false;
        arm();
      }
    },
    request: schedule,
    startPolling,
    get polling() {
      return pollTimer !== undefined;
    },
    async stop() {
      stopped = true;
      for (const timer of [pollTimer, resyncTimer]) if (timer !== undefined) clearInterval(timer);
      if (debounceTimer !== undefined) clearTimeout(debounceTimer);
      pollTimer = resyncTimer = debounceTimer = undefined;
      await scanning?.catch(() => {});
    },
  };
}
