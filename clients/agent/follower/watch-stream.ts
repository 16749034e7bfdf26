/**
 * One WatchConfig call, the I/O shell around the watch session: it opens
 * the stream, hands each event to its owner, and abandons the call when the
 * stream stays silent for the keep-alive timeout (a partition or a frozen
 * peer shows as silence, not as an error). It decides nothing about the
 * events: the owner steps its {@link WatchSession} with them.
 */
import type { Client } from "@connectrpc/connect";
import {
  type ConfigService,
  ConfigView,
  type WatchConfigResponse,
} from "../../../gen/aether/registry/v1/config_service_pb.js";

/** Options of {@link runWatchStream}. */
export interface WatchStreamOptions {
  /** The generated client (only `watchConfig` is used). */
  readonly client: Pick<Client<typeof ConfigService>, "watchConfig">;
  /** The services to watch (view ALL_ORIGINS). */
  readonly services: readonly string[];
  /** The revision to resume from; 0 asks for a snapshot. */
  readonly resume: bigint;
  /** How long the stream may stay silent before it counts as dead, in milliseconds. */
  readonly keepaliveTimeoutMs: number;
  /** Cancels the call; a cancelled call resolves without an error. */
  readonly signal: AbortSignal;
  /** Called with each event; an exception abandons the stream and is its outcome. */
  onEvent(event: WatchConfigResponse): void;
  /** Called when the stream was abandoned for silence, before it resolves. */
  onSilent(): void;
}

/**
 * Runs one WatchConfig call until it ends, fails, goes silent or `signal`
 * aborts. Resolves with why it failed (the error `onEvent` threw, the call's
 * error, or a keep-alive timeout error), or undefined when the registrar
 * ended it or `signal` aborted. Never rejects; the call is always cancelled
 * and the timer released before it resolves.
 */
export async function runWatchStream(options: WatchStreamOptions): Promise<Error | undefined> {
  const { signal, keepaliveTimeoutMs } = options;
  const call = new AbortController();
  const cancel = () => call.abort();
  signal.addEventListener("abort", cancel, { once: true });
  let silent = false;
  const watchdog = setTimeout(() => {
    silent = true;
    call.abort();
  }, keepaliveTimeoutMs);
  try {
    const stream = options.client.watchConfig(
      {
        services: [...options.services],
        resumeRevision: options.resume,
        view: ConfigView.ALL_ORIGINS,
      },
      { signal: call.signal },
    );
    for await (const event of stream) {
      watchdog.refresh();
      options.onEvent(event);
    }
    return undefined;
  } catch (error) {
    if (signal.aborted) return undefined;
    if (silent) {
      options.onSilent();
      return new Error(
        `no event for ${keepaliveTimeoutMs} ms: the stream is dead (keep-alive timeout)`,
      );
    }
    return error instanceof Error ? error : new Error(String(error));
  } finally {
    clearTimeout(watchdog);
    signal.removeEventListener("abort", cancel);
    call.abort();
  }
}
