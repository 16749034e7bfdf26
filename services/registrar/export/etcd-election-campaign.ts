/**
 * The campaign of one election candidate, etcd's election recipe: create the
 * candidate's key `<name>/<lease id in hex>` on its lease, then wait until no
 * key created before it is left, each time watching the one just before it
 * (over one raw watch stream that fails once, see etcd-watch.ts, not etcd3's
 * watch manager), and while any key is left under an election it defers to
 * (the old name of a moved election), wait for that too. Every request has
 * a deadline.
 */
import { CompareResult, CompareTarget, SortOrder, SortTarget } from "etcd3";
import { callEtcd, prefixEnd } from "../store/etcd-client.js";
import { openEtcdWatch } from "../store/etcd-watch.js";
import type { ElectionEtcd } from "./etcd-election-lease.js";
import { campaignCreateRevision, predecessorToWaitFor } from "./etcd-election-rules.js";

/**
 * Creates the candidate's `key` on lease `leaseId` with `identity` as its
 * value, unless it exists already, and resolves to the key's creation
 * revision. Rejects when etcd fails the request, and with an Error when the
 * key vanished right after it was written.
 */
export async function createCampaignKey(
  etcd: ElectionEtcd,
  key: string,
  identity: string,
  leaseId: string,
): Promise<number> {
  const keyBytes = Buffer.from(key);
  const created = await callEtcd(
    "campaign",
    etcd.requestTimeoutMs,
    (callOptions) =>
      etcd.client.kv.txn(
        {
          compare: [
            {
              key: keyBytes,
              target: CompareTarget.Create,
              result: CompareResult.Equal,
              create_revision: 0,
            },
          ],
          success: [
            { request_put: { key: keyBytes, value: Buffer.from(identity), lease: leaseId } },
          ],
          failure: [{ request_range: { key: keyBytes } }],
        },
        callOptions,
      ),
    etcd.client.endpointCount,
  );
  const createRevision = campaignCreateRevision(created);
  if (createRevision === undefined) {
    throw new Error(`the campaign key ${key} vanished right after it was written`);
  }
  return createRevision;
}

/** The election a candidate campaigns in, and the ones it defers to. */
export interface CampaignElection {
  /** The election name (without a trailing slash). */
  readonly name: string;
  /**
   * Elections (without a trailing slash) whose every key keeps this
   * candidate from leading: the old name of an election that moved, where
   * candidates of an older release still campaign during a rolling upgrade.
   */
  readonly deferTo: readonly string[];
}

/**
 * Resolves once no candidate key of `election` was created before
 * `createRevision` and no key at all exists under the elections it defers
 * to, or `signal` aborts; rejects when a request or a watch fails. Each
 * wait watches one key until it is deleted, then looks again.
 */
export async function waitForPredecessors(
  etcd: ElectionEtcd,
  election: CampaignElection,
  createRevision: number,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    let predecessor = predecessorToWaitFor(
      await rangeOne(etcd, `${election.name}/`, createRevision - 1),
    );
    let what = "waiting for the export leader's key to go";
    for (const other of election.deferTo) {
      if (predecessor !== undefined) break;
      predecessor = predecessorToWaitFor(await rangeOne(etcd, `${other}/`, undefined));
      what = "waiting for an older release's export candidate to go (its election has moved)";
    }
    if (predecessor === undefined) return;
    etcd.logger.debug({ predecessor: predecessor.key.toString("utf8") }, what);
    await waitForDelete(etcd, predecessor.key, predecessor.startRevision, signal);
  }
}

/**
 * Reads the newest-created key under `keyPrefix` (created at or before
 * `maxCreateRevision` when given), at most one, keys only; rejects as
 * `callEtcd` does.
 */
export function rangeOne(
  etcd: ElectionEtcd,
  keyPrefix: string,
  maxCreateRevision: number | undefined,
): Promise<{ header: { revision: string }; kvs: { key: Buffer }[] }> {
  return callEtcd(
    "election range",
    etcd.requestTimeoutMs,
    (callOptions) =>
      etcd.client.kv.range(
        {
          key: Buffer.from(keyPrefix),
          range_end: prefixEnd(keyPrefix),
          ...(maxCreateRevision === undefined ? {} : { max_create_revision: maxCreateRevision }),
          sort_target: SortTarget.Create,
          sort_order: SortOrder.Descend,
          limit: 1,
          keys_only: true,
        },
        callOptions,
      ),
    etcd.client.endpointCount,
  );
}

/** Resolves once `key` is deleted after `startRevision`, or `signal` aborts; rejects when the watch fails. */
function waitForDelete(
  etcd: ElectionEtcd,
  key: Buffer,
  startRevision: number,
  signal: AbortSignal,
): Promise<void> {
  const { client, requestTimeoutMs } = etcd;
  return new Promise<void>((resolve, reject) => {
    const done = (): void => {
      signal.removeEventListener("abort", done);
      stop();
      resolve();
    };
    const stop = openEtcdWatch(
      client,
      { key, startRevision, requestTimeoutMs, probeIntervalMs: requestTimeoutMs },
      {
        changes: (changes) => {
          if (changes.some((change) => change.type === "delete")) done();
        },
        error: (error) => {
          signal.removeEventListener("abort", done);
          reject(error);
        },
      },
    );
    signal.addEventListener("abort", done, { once: true });
  });
}
