/**
 * The campaign of one election candidate, etcd's election recipe: create the
 * candidate's key `<name>/<lease id in hex>` on its lease, then wait until no
 * key created before it is left, each time watching the one just before it
 * (over one raw watch stream that fails once, see etcd-watch.ts, not etcd3's
 * watch manager). Every request has a deadline.
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
  const created = await callEtcd("campaign", etcd.requestTimeoutMs, (callOptions) =>
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
        success: [{ request_put: { key: keyBytes, value: Buffer.from(identity), lease: leaseId } }],
        failure: [{ request_range: { key: keyBytes } }],
      },
      callOptions,
    ),
  );
  const createRevision = campaignCreateRevision(created);
  if (createRevision === undefined) {
    throw new Error(`the campaign key ${key} vanished right after it was written`);
  }
  return createRevision;
}

/**
 * Resolves once no candidate key of election `name` was created before
 * `createRevision`, or `signal` aborts; rejects when a request or a watch
 * fails.
 */
export async function waitForPredecessors(
  etcd: ElectionEtcd,
  name: string,
  createRevision: number,
  signal: AbortSignal,
): Promise<void> {
  const keyPrefix = `${name}/`;
  while (!signal.aborted) {
    const response = await callEtcd("election range", etcd.requestTimeoutMs, (callOptions) =>
      etcd.client.kv.range(
        {
          key: Buffer.from(keyPrefix),
          range_end: prefixEnd(keyPrefix),
          max_create_revision: createRevision - 1,
          sort_target: SortTarget.Create,
          sort_order: SortOrder.Descend,
          limit: 1,
        },
        callOptions,
      ),
    );
    const predecessor = predecessorToWaitFor(response);
    if (predecessor === undefined) return;
    etcd.logger.debug(
      { predecessor: predecessor.key.toString("utf8") },
      "waiting for the export leader's key to go",
    );
    await waitForDelete(etcd, predecessor.key, predecessor.startRevision, signal);
  }
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
