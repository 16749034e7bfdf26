/**
 * One campaign session of the etcd election, and the term bookkeeping that
 * goes with it: a new lease, the campaign key, the wait for the
 * predecessors, then one term from election until the session ends (the
 * lease lost or no longer provably alive, the term relinquished, a candidate
 * of an older release appearing under an election it defers to, or the
 * election stopped). Ending the session ends its term first, so writes stop
 * before anything else runs; the lease is revoked on the way out, so another
 * candidate can take over at once.
 */
import { createCampaignKey, waitForPredecessors } from "./etcd-election-campaign.js";
import { watchDeferredElections } from "./etcd-election-defer.js";
import {
  type ElectionEtcd,
  grantLease,
  keepLeaseAlive,
  revokeLease,
} from "./etcd-election-lease.js";
import { campaignKey } from "./etcd-election-rules.js";
import type { TermKeeper } from "./leader-election.js";

/** What one {@link runCampaignSession} campaigns with and reports to. */
export interface CampaignSession {
  /** The client, request deadline and logger of the election. */
  readonly etcd: ElectionEtcd;
  /** The election name (without a trailing slash). */
  readonly name: string;
  /** Elections (without a trailing slash) under which any key keeps this candidate from leading. */
  readonly deferTo: readonly string[];
  /** The lease TTL to ask for, in whole seconds. */
  readonly ttlSeconds: number;
  /** What this candidate writes in its key. */
  readonly identity: string;
  /** The election's term bookkeeping: a term begins when elected, ends with the session. */
  readonly keeper: TermKeeper;
  /** Aborted when the election stops: the session ends with reason `"stopped"`. */
  readonly stopping: AbortSignal;
  /**
   * Called synchronously when the session begins, with the function that
   * ends it with a reason (for `relinquish`), and with undefined once it is
   * over.
   */
  setEnd(end: ((reason: string) => void) | undefined): void;
  /** Called when this candidate is elected, before the term is reported in the log. */
  onElected(): void;
}

/**
 * Runs one campaign with one lease: resolves when it ends, rejects when
 * etcd fails it. Whichever way it ends, the term it began (if any) has
 * ended, the keep-alive is stopped and the lease revoked (a failed
 * revocation is only logged).
 */
export async function runCampaignSession(session: CampaignSession): Promise<void> {
  const { etcd, name, ttlSeconds, identity, keeper, stopping } = session;
  const { logger } = etcd;
  const ended = settleOnce<string>();
  const aborted = new AbortController();
  /** Ends the session, and its term at once (writes stop before anything else runs). */
  const finish = (reason: string): void => {
    if (ended.settled()) return;
    keeper.end(reason);
    aborted.abort(reason);
    ended.resolve(reason);
  };
  session.setEnd(finish);
  const onStop = (): void => finish("stopped");
  stopping.addEventListener("abort", onStop, { once: true });
  let stopKeepalive = (): void => {};
  let stopDeferWatch = (): void => {};
  let leaseId: string | undefined;
  try {
    const lease = await grantLease(etcd, ttlSeconds);
    leaseId = lease.id;
    const { ttlMs } = lease;
    stopKeepalive = keepLeaseAlive(etcd, lease, finish);
    const key = campaignKey(name, lease.id);
    const createRevision = await createCampaignKey(etcd, key, identity, lease.id);
    logger.debug({ key, createRevision, ttlMs }, "campaigning for export leadership");
    await waitForPredecessors(
      etcd,
      { name, deferTo: session.deferTo },
      createRevision,
      aborted.signal,
    );
    if (ended.settled()) return;
    const term = keeper.begin({ key, createRevision });
    // A candidate of an older release that starts campaigning now would lead
    // too (it does not know this election): step aside for it.
    stopDeferWatch = watchDeferredElections(etcd, session.deferTo, (other) =>
      finish(`a candidate of an older release campaigns at ${other}; deferring to it`),
    );
    session.onElected();
    logger.info({ term: term.id, key, createRevision, ttlMs, identity }, "elected export leader");
    const reason = await ended.promise;
    if (reason === "stopped") logger.info({ term: term.id }, "resigned export leadership");
    else logger.warn({ term: term.id, reason }, "export leadership lost");
  } finally {
    finish("the campaign ended");
    session.setEnd(undefined);
    stopping.removeEventListener("abort", onStop);
    stopKeepalive();
    stopDeferWatch();
    if (leaseId !== undefined) await revokeLease(etcd, leaseId);
  }
}

/** A promise with its resolve function, resolved at most once. */
function settleOnce<T>(): { promise: Promise<T>; resolve(value: T): void; settled(): boolean } {
  let resolveFn: (value: T) => void = () => {};
  let done = false;
  const promise = new Promise<T>((resolve) => {
    resolveFn = resolve;
  });
  return {
    promise,
    resolve(value) {
      if (done) return;
      done = true;
      resolveFn(value);
    },
    settled: () => done,
  };
}
