/**
 * The follower's polling, an I/O shell: `ListAllConfig` for the dependency
 * set every poll interval (± 10 % jitter, so a fleet of agents that started
 * or lost their registrar together does not poll in lockstep); a complete
 * listing replaces the imported state, a failed one changes nothing. It runs
 * either as the whole of poll mode ({@link ConfigPoller.run}) or in the
 * background as the stream's fallback ({@link ConfigPoller.startFallback}).
 */
import type { Client } from "@connectrpc/connect";
import type { ConfigService } from "../../../gen/aether/registry/v1/config_service_pb.js";
import type { Logger } from "../../../services/runtime/logger.js";
import { wakeableSleep } from "../../../services/runtime/sleep.js";
import type { ImportOperation } from "../agent-metrics.js";
import { listConfig } from "./config-listing.js";
import type { ImportedState } from "./imported-state.js";

/**
 * Each poll period is the interval times a factor drawn uniformly from
 * 1 ± this.
 */
const POLL_JITTER = 0.1;

/** Options of {@link createConfigPoller}. */
export interface ConfigPollerOptions {
  /** The generated client (only `listAllConfig` is used). */
  readonly client: Pick<Client<typeof ConfigService>, "listAllConfig">;
  /** The state a complete listing replaces; its dependency set is what is listed. */
  readonly imported: ImportedState;
  /** The ListAllConfig page size. */
  readonly pageSize: number;
  /** The timeout of each page request, in milliseconds. */
  readonly requestTimeoutMs: number;
  /** The polling period, in milliseconds. */
  readonly intervalMs: number;
  /** Uniform numbers in [0, 1) for the jitter. */
  readonly random: () => number;
  /** Logger. */
  readonly logger: Logger;
  /** Called after each poll. */
  onPoll?(result: "ok" | "error"): void;
  /** Called with each failed poll's error (operation `poll`). */
  onError?(operation: ImportOperation, error: Error): void;
  /** Called after each applied listing (after `onPoll`). */
  onSuccess(): void;
}

/** A poller; see the module comment. */
export interface ConfigPoller {
  /** Polls every interval until `signal` aborts; never rejects on a failed poll. */
  run(signal: AbortSignal): Promise<void>;
  /**
   * Starts polling in the background until {@link ConfigPoller.stopFallback}
   * or until `parent` aborts. Does nothing when the fallback runs already or
   * `parent` has aborted.
   */
  startFallback(parent: AbortSignal): void;
  /** Stops the background polling, if any; resolves once its loop has ended. */
  stopFallback(): Promise<void>;
  /** Whether the background polling runs. */
  readonly fallback: boolean;
}

/** Creates a poller; nothing runs until `run` or `startFallback`. */
export function createConfigPoller(options: ConfigPollerOptions): ConfigPoller {
  const { imported, logger } = options;
  /** Consecutive failed polls, so that a long outage logs once at warn, then at debug. */
  let failures = 0;
  let fallback: { controller: AbortController; done: Promise<void> } | undefined;

  /** Polls once; resolves true when a complete listing was applied. */
  const pollOnce = async (signal: AbortSignal): Promise<boolean> => {
    try {
      const listing = await listConfig({
        client: options.client,
        services: imported.services,
        pageSize: options.pageSize,
        requestTimeoutMs: options.requestTimeoutMs,
        signal,
      });
      if (signal.aborted) return false;
      imported.listed(listing.revision, listing.changes);
      if (failures > 0) logger.info({ failures }, "poll succeeded again");
      failures = 0;
      options.onPoll?.("ok");
      return true;
    } catch (error) {
      if (signal.aborted) return false;
      const failure = error instanceof Error ? error : new Error(String(error));
      options.onPoll?.("error");
      options.onError?.("poll", failure);
      failures++;
      logger[failures === 1 ? "warn" : "debug"](
        { err: failure.message, failures },
        "poll failed; keeping the last-known config",
      );
      return false;
    }
  };

  const run = async (signal: AbortSignal): Promise<void> => {
    while (!signal.aborted) {
      if (await pollOnce(signal)) options.onSuccess();
      const factor = 1 - POLL_JITTER + 2 * POLL_JITTER * options.random();
      await wakeableSleep(options.intervalMs * factor, signal).done;
    }
  };

  return {
    run,
    startFallback(parent) {
      if (fallback !== undefined || parent.aborted) return;
      const controller = new AbortController();
      const abort = () => controller.abort();
      parent.addEventListener("abort", abort, { once: true });
      logger.warn({ pollIntervalMs: options.intervalMs }, "stream down: polling until it is back");
      const done = run(controller.signal).finally(() => parent.removeEventListener("abort", abort));
      fallback = { controller, done };
    },
    async stopFallback() {
      const current = fallback;
      fallback = undefined;
      current?.controller.abort();
      await current?.done;
    },
    get fallback() {
      return fallback !== undefined;
    },
  };
}
