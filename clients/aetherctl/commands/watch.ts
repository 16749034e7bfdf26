/**
 * `aetherctl watch`: streams WatchConfig events, one line each, until the
 * user interrupts it (exit 0) or the stream ends (exit 1: the registrar went
 * away or stopped the stream). Either way it says on stderr which revision
 * to `--resume` from.
 */
import { ConfigView, WatchEventType } from "../../../gen/aether/registry/v1/config_service_pb.js";
import type { WatchCommand } from "../aetherctl-flags.js";
import type { CommandContext } from "../command-context.js";
import { createWatchPrinter } from "../watch-format.js";

/** Runs `aetherctl watch`; resolves with the exit code. */
export async function runWatch(context: CommandContext, command: WatchCommand): Promise<number> {
  const printer = createWatchPrinter(context.global.output, { color: context.color });
  context.stdout(printer.start());
  // The resume point: the last revision applied once the stream is synced
  // (an interrupted snapshot is not a state to resume from).
  let resumeFrom = command.resume;
  let synced = false;
  const resumeHint = () => `resume with --resume ${resumeFrom}`;
  try {
    const stream = context.client.watchConfig(
      {
        services: [...command.services],
        resumeRevision: command.resume,
        view: command.allOrigins ? ConfigView.ALL_ORIGINS : ConfigView.EFFECTIVE,
      },
      { signal: context.signal },
    );
    for await (const event of stream) {
      if (event.type === WatchEventType.SYNCED) synced = true;
      if (synced) resumeFrom = event.revision;
      if (event.type === WatchEventType.KEEPALIVE && !command.keepalives) continue;
      context.stdout(printer.event(event));
    }
  } catch (error) {
    if (context.signal.aborted) {
      context.stderr(`aetherctl: watch stopped; ${resumeHint()}\n`);
      return 0;
    }
    context.stderr(`aetherctl: watch ended; ${resumeHint()}\n`);
    throw error;
  }
  context.stderr(
    `aetherctl: the registrar ended the watch (it is shutting down?); ${resumeHint()}\n`,
  );
  return 1;
}
