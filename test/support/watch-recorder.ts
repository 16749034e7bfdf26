/**
 * Records the events of a WatchConfig stream in the background so tests can
 * await conditions on them, and cancels the stream when done.
 */

import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { ConnectError } from "@connectrpc/connect";
import type {
  ConfigService,
  WatchConfigRequest,
  WatchConfigRequestSchema,
  WatchConfigResponse,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import { waitFor } from "./wait.js";

/** A stream being recorded. */
export interface WatchRecorder {
  /** Every event received so far. */
  readonly events: WatchConfigResponse[];
  /** Resolves when the stream ends: undefined for OK, the ConnectError otherwise. */
  readonly ended: Promise<ConnectError | undefined>;
  /** Whether the stream has ended. */
  readonly done: boolean;
  /** Waits until `predicate(events)` holds. */
  until(
    predicate: (events: WatchConfigResponse[]) => boolean,
    timeoutMs?: number,
    what?: string,
  ): Promise<void>;
  /** Cancels the stream (client side) and waits for it to end. */
  cancel(): Promise<void>;
}

/** Starts a WatchConfig call and records it. */
export function recordWatch(
  client: Client<typeof ConfigService>,
  request: MessageInitShape<typeof WatchConfigRequestSchema> | WatchConfigRequest,
): WatchRecorder {
  const events: WatchConfigResponse[] = [];
  const abort = new AbortController();
  let done = false;
  const ended = (async () => {
    try {
      for await (const event of client.watchConfig(request, { signal: abort.signal })) {
        events.push(event);
      }
      return undefined;
    } catch (error) {
      return ConnectError.from(error);
    } finally {
      done = true;
    }
  })();
  return {
    events,
    ended,
    get done() {
      return done;
    },
    until(predicate, timeoutMs = 5_000, what = "watch events") {
      return waitFor(() => predicate(events), timeoutMs, what);
    },
    async cancel() {
      abort.abort();
      await ended;
    },
  };
}
