/**
 * A leader's watch over the elections it defers to (the old name of a moved
 * election, where candidates of an older release campaign): a key appearing
 * there during the term (an old-release replica started after this one was
 * elected, as when its container restarts mid-upgrade) ends the term, so the
 * two never lead together; the next campaign then waits for that key to go
 * (etcd-election-campaign.ts). One raw watch stream per name; a failed
 * stream is replaced after a fresh look, so no key is missed in between.
 */
import { prefixEnd } from "../store/etcd-client.js";
import { openEtcdWatch } from "../store/etcd-watch.js";
import { rangeOne } from "./etcd-election-campaign.js";
import type { ElectionEtcd } from "./etcd-election-lease.js";

/** How long to wait before looking again after a failed look or watch, in milliseconds. */
const RETRY_MS = 500;

/**
 * Watches every key under each of `names` (without a trailing slash) and
 * calls `onCandidate` once, with the key, when one exists or appears.
 * Returns the function that stops it (after which nothing is called). With
 * no names it does nothing. Never rejects, never throws.
 */
export function watchDeferredElections(
  etcd: ElectionEtcd,
  names: readonly string[],
  onCandidate: (key: string) => void,
): () => void {
  let stopped = false;
  const stops = new Set<() => void>();
  const found = (key: string): void => {
    if (stopped) return;
    stop();
    onCandidate(key);
  };
  const retry = (look: () => void): void => {
    if (stopped) return;
    const timer = setTimeout(look, RETRY_MS);
    const cancel = (): void => clearTimeout(timer);
    stops.add(cancel);
  };
  const watchOne = (name: string): void => {
    const keyPrefix = `${name}/`;
    const look = (): void => {
      rangeOne(etcd, keyPrefix, undefined).then(
        (listing) => {
          if (stopped) return;
          const existing = listing.kvs[0];
          if (existing !== undefined) {
            found(existing.key.toString("utf8"));
            return;
          }
          const stopWatch = openEtcdWatch(
            etcd.client,
            {
              key: Buffer.from(keyPrefix),
              rangeEnd: prefixEnd(keyPrefix),
              startRevision: Number(listing.header.revision) + 1,
              requestTimeoutMs: etcd.requestTimeoutMs,
              probeIntervalMs: etcd.requestTimeoutMs,
            },
            {
              changes: (changes) => {
                const put = changes.find((change) => change.type === "put");
                if (put !== undefined) found(put.key);
              },
              error: (error) => {
                stops.delete(stopWatch);
                etcd.logger.debug(
                  { err: error, name },
                  "deferred election watch failed; looking again",
                );
                retry(look);
              },
            },
          );
          stops.add(stopWatch);
        },
        (error: unknown) => {
          etcd.logger.debug({ err: error, name }, "could not read a deferred election; retrying");
          retry(look);
        },
      );
    };
    look();
  };
  const stop = (): void => {
    stopped = true;
    for (const each of [...stops]) each();
    stops.clear();
  };
  for (const name of names) watchOne(name);
  return stop;
}
