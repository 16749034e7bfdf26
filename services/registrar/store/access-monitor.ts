/**
 * Whether the registrar's store credentials still allow what it does: the
 * store's `checkAccess` asked at start and then every `okIntervalMs`
 * (every `deniedIntervalMs` while denied or unanswered, so a fixed role or
 * a store that is back is noticed soon).
 * `/readyz` reports a denial; a store that cannot be asked changes nothing
 * (the config cache reports that already).
 */
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import { sleep } from "../../runtime/sleep.js";
import { type ConfigStore, StorePermissionError } from "./config-store.js";

/** How often access is checked while it is granted, in milliseconds. */
export const ACCESS_CHECK_INTERVAL_MS = 30_000;

/** How often access is checked while it is denied, in milliseconds. */
export const ACCESS_RECHECK_INTERVAL_MS = 5_000;

/** Options of {@link createAccessMonitor}. */
export interface AccessMonitorOptions {
  /** The store; a store without `checkAccess` is never denied. */
  readonly store: ConfigStore;
  /** Whether the registrar writes (exports), so write access is checked too. */
  readonly write: boolean;
  /** Where a denial and its end are logged; default silent. */
  readonly logger?: Logger;
  /** Default {@link ACCESS_CHECK_INTERVAL_MS}. */
  readonly okIntervalMs?: number;
  /** Default {@link ACCESS_RECHECK_INTERVAL_MS}. */
  readonly deniedIntervalMs?: number;
}

/** A running check of the store credentials; see {@link createAccessMonitor}. */
export interface AccessMonitor {
  /** What the last check found denied (a {@link StorePermissionError}'s message); undefined while granted or unknown. */
  readonly denied: string | undefined;
  /** Starts checking in the background. Idempotent. */
  start(): void;
  /** Stops checking; resolves once no check runs. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Creates the monitor. Nothing it does rejects or throws: a check that
 * fails for another reason than a permission keeps the last finding.
 */
export function createAccessMonitor(options: AccessMonitorOptions): AccessMonitor {
  const { store, write } = options;
  const logger = options.logger ?? createSilentLogger();
  const okIntervalMs = options.okIntervalMs ?? ACCESS_CHECK_INTERVAL_MS;
  const deniedIntervalMs = options.deniedIntervalMs ?? ACCESS_RECHECK_INTERVAL_MS;
  const stopping = new AbortController();
  let denied: string | undefined;
  let lastProblem: string | undefined;
  let loop: Promise<void> | undefined;

  /** Checks once; resolves true when granted, false when denied or not answered. */
  const checkOnce = async (check: NonNullable<ConfigStore["checkAccess"]>): Promise<boolean> => {
    try {
      await check.call(store, { write });
      if (denied !== undefined) logger.info("store access granted again");
      denied = undefined;
      return true;
    } catch (error) {
      if (!(error instanceof StorePermissionError)) {
        const problem = error instanceof Error ? error.message : String(error);
        if (problem !== lastProblem) logger.warn({ err: problem }, "store access not checked");
        lastProblem = problem;
        return false;
      }
      if (denied !== error.message) logger.error({ err: error.message }, "store access denied");
      denied = error.message;
      return false;
    }
  };

  const run = async (check: NonNullable<ConfigStore["checkAccess"]>): Promise<void> => {
    while (!stopping.signal.aborted) {
      const granted = await checkOnce(check);
      await sleep(granted ? okIntervalMs : deniedIntervalMs, stopping.signal);
    }
  };

  return {
    get denied() {
      return denied;
    },
    start() {
      if (loop !== undefined || store.checkAccess === undefined) return;
      loop = run(store.checkAccess);
    },
    async stop() {
      stopping.abort();
      await loop;
    },
  };
}
