/**
 * One raw etcd watch stream (not etcd3's reconnecting watcher, which
 * reconnects forever and can emit `error` events nobody listens to): it
 * reports changes until it fails once, probes an idle stream for liveness,
 * and never raises an unhandled error event. The etcd store and the export
 * election watch only through it.
 */
import type { IDuplexStream, IKeyValue, IWatchRequest, IWatchResponse } from "etcd3";
import { measureLoopBusy } from "../../runtime/loop-busy.js";
import { StoreCompactedError, StoreUnavailableError } from "./config-store.js";
import type { RawChange } from "./decode-entry.js";
import { closeStream, type EtcdClient } from "./etcd-client.js";
import { judgeMissedDeadline } from "./starvation-grace.js";

/** What {@link openEtcdWatch} watches. */
export interface EtcdWatchSpec {
  /** The first key (or the only key, without `rangeEnd`). */
  readonly key: Buffer;
  /** The end of the key range (exclusive); undefined watches `key` alone. */
  readonly rangeEnd?: Buffer;
  /** The first revision to report. */
  readonly startRevision: number;
  /** How long the stream may take to start, and to answer a progress request, in milliseconds. */
  readonly requestTimeoutMs: number;
  /** How long the stream may be idle before a progress request probes it, in milliseconds. */
  readonly probeIntervalMs: number;
}

/** Receives what a raw watch stream reports; see {@link openEtcdWatch}. */
export interface EtcdWatchSink {
  /** Called with every non-empty batch of changes, in revision order. */
  changes(changes: RawChange[]): void;
  /** Called once when the watch cannot continue; nothing is reported afterwards. */
  error(error: Error): void;
  /** Called once when etcd confirms the watch was created (optional). */
  started?(): void;
}

/**
 * Opens a raw etcd watch stream (not etcd3's reconnecting watcher) and
 * reports to `sink` until it fails (one `sink.error`: a
 * {@link StoreCompactedError} when the start revision was compacted, a
 * {@link StoreUnavailableError} when the stream fails, ends, is cancelled by
 * etcd, or does not answer a liveness probe in time, unless this process was
 * too busy to read the answer; a stream that did not start or answer in time
 * also sets its member aside, so that the next stream goes to another
 * member) or the returned function
 * stops it (nothing is reported afterwards). Never raises an unhandled error
 * event.
 */
export function openEtcdWatch(
  client: EtcdClient,
  spec: EtcdWatchSpec,
  sink: EtcdWatchSink,
): () => void {
  const { requestTimeoutMs, probeIntervalMs, startRevision } = spec;
  const what = spec.key.toString("utf8");
  let done = false;
  let stream: IDuplexStream<IWatchRequest, IWatchResponse> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let setMemberAside: ((reason: string) => void) | undefined;

  const finish = (error?: Error): void => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    if (stream !== undefined) closeStream(stream);
    if (error !== undefined) sink.error(error);
  };
  const unavailable = (reason: string, cause?: unknown): StoreUnavailableError =>
    new StoreUnavailableError(`etcd watch on ${what}: ${reason}`, { cause });

  /**
   * Expects an answer within the request timeout. A miss while this process
   * was too busy to read the answer is excused a few times in a row (see
   * `starvation-grace.ts`): the wait starts again.
   */
  const expectAnswer = (reason: string, excused = 0): void => {
    clearTimeout(timer);
    const busy = measureLoopBusy();
    timer = setTimeout(() => {
      if (judgeMissedDeadline({ busy: busy(), excused }) === "excuse") {
        expectAnswer(reason, excused + 1);
      } else {
        setMemberAside?.(reason);
        finish(unavailable(reason));
      }
    }, requestTimeoutMs);
  };
  const scheduleProbe = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      stream?.write({ progress_request: {} });
      expectAnswer(`no answer to a progress request within ${requestTimeoutMs} ms`);
    }, probeIntervalMs);
  };

  const onResponse = (response: IWatchResponse): void => {
    if (done) return;
    scheduleProbe();
    if (response.compact_revision !== "0" && response.compact_revision !== "") {
      const oldest = Number(response.compact_revision);
      finish(
        new StoreCompactedError(
          `revision ${startRevision} has been compacted (oldest readable: ${oldest})`,
          oldest,
        ),
      );
    } else if (response.created) {
      sink.started?.();
    }
    if (done) return;
    if (response.canceled) {
      finish(unavailable(`etcd cancelled the watch: ${response.cancel_reason || "no reason"}`));
    } else if (response.events.length > 0) {
      sink.changes(response.events.map(toRawChange));
    }
  };

  expectAnswer(`not started within ${requestTimeoutMs} ms`);
  client.openWatchStream().then(
    ({ stream: opened, setMemberAside: setAside }) => {
      setMemberAside = setAside;
      // An 'error' listener first, always: an unhandled 'error' event would crash the process.
      opened.on("error", (error) => finish(unavailable(error.message, error)));
      if (done) {
        closeStream(opened);
        return;
      }
      stream = opened;
      opened.on("data", onResponse);
      opened.on("end", () => finish(unavailable("the stream ended")));
      opened.write({
        create_request: {
          key: spec.key,
          ...(spec.rangeEnd === undefined ? {} : { range_end: spec.rangeEnd }),
          start_revision: startRevision,
        },
      });
    },
    (error: unknown) => finish(unavailable(String(error), error)),
  );
  return () => finish();
}

/** Converts an etcd watch event to a raw change. */
function toRawChange(event: { type: string; kv: IKeyValue }): RawChange {
  const key = event.kv.key.toString("utf8");
  const revision = Number(event.kv.mod_revision);
  return event.type === "Delete"
    ? { type: "delete", key, revision }
    : { type: "put", key, value: event.kv.value, revision };
}
