/**
 * A store watch that outlives the etcd stream under it: when the stream
 * fails (a member went silent and was set aside, or cut the stream), a new
 * one is opened from the revision after the last change reported, on
 * another member, as watch-resume-rule.ts decides; the sink sees one
 * unbroken sequence of changes, and an error only when the rule ends the
 * watch.
 */
import { StoreCompactedError } from "./config-store.js";
import type { EtcdConnection } from "./etcd-connection.js";
import type { EtcdWatchSink } from "./etcd-watch.js";
import { judgeWatchFailure } from "./watch-resume-rule.js";

/** Receives a resuming watch's changes and its end; see {@link openResumingWatch}. */
export interface ResumingWatchSink extends EtcdWatchSink {
  /** Called when a failed stream is replaced, with its error and the revision the new one starts at. */
  resumed(error: Error, fromRevision: number): void;
}

/**
 * Watches the keys starting with `keyPrefix` from `startRevision` on through
 * `connection`, resuming failed streams without a gap (see the file
 * comment); returns the function that stops it (nothing is reported
 * afterwards). `sink.error` is called at most once, after which nothing is
 * reported.
 */
export function openResumingWatch(
  connection: EtcdConnection,
  startRevision: number,
  keyPrefix: string,
  sink: ResumingWatchSink,
): () => void {
  const endpointCount = connection.client.endpointCount;
  let next = startRevision;
  /** When the current run of failures began; undefined once a stream is confirmed. */
  let failingSince: number | undefined;
  let stopped = false;
  let stopCurrent: () => void = () => {};
  let wait: NodeJS.Timeout | undefined;

  const open = (): void => {
    stopCurrent = connection.openWatch(next, keyPrefix, {
      started: () => {
        failingSince = undefined;
      },
      changes: (changes) => {
        if (stopped) return;
        const last = changes[changes.length - 1];
        if (last !== undefined) next = last.revision + 1;
        sink.changes(changes);
      },
      error: (error) => {
        if (stopped) return;
        const compacted = error instanceof StoreCompactedError;
        failingSince ??= Date.now();
        const failingForMs = Date.now() - failingSince;
        const verdict = judgeWatchFailure({ compacted, endpointCount, failingForMs });
        if (verdict === "end") {
          stopped = true;
          sink.error(error);
          return;
        }
        sink.resumed(error, next);
        wait = setTimeout(open, verdict.resumeAfterMs);
      },
    });
  };

  open();
  return () => {
    stopped = true;
    clearTimeout(wait);
    stopCurrent();
  };
}
