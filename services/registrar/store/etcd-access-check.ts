/**
 * Whether the etcd user a store signs in as may do what its registrar does,
 * asked of etcd without changing anything: a count-only range over the whole
 * prefix (read), and a transaction whose comparison can never hold with a
 * delete of the origin's whole subtree in its success branch (etcd checks
 * the permissions of every operation of a transaction before it evaluates
 * the comparison, so a missing write permission on any key of the subtree
 * is refused, and nothing is ever deleted). etcd's write permission covers
 * puts and deletes alike. What the registrar needs is what
 * `aetherctl etcd-rbac` grants.
 */
import { CompareResult, CompareTarget, EtcdPermissionDeniedError } from "etcd3";
import { originSubtreePrefix, storeKeyPrefix } from "../../common/store-layout.js";
import { StorePermissionError } from "./config-store.js";
import { prefixEnd } from "./etcd-client.js";
import type { EtcdConnection } from "./etcd-connection.js";

/** The store whose access {@link checkEtcdAccess} checks. */
export interface EtcdAccessTarget {
  /** The connection to ask over. */
  readonly connection: EtcdConnection;
  /** The normalized store prefix. */
  readonly prefix: string;
  /** The origin whose subtree the store writes. */
  readonly origin: string;
  /** The etcd user the store signs in as, when known (for the message). */
  readonly user: string | undefined;
}

/** Reports whether `error` (or what it wraps) is etcd's permission denial. */
export function isPermissionDenied(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e instanceof EtcdPermissionDeniedError || /permission denied/i.test(e.message)) return true;
  }
  return false;
}

/**
 * Resolves when `target`'s user may read `<prefix>/` and, with `write`,
 * write `<prefix>/clusters/<origin>/`. Rejects with a
 * {@link StorePermissionError} naming the user, what it may not do and what
 * a registrar needs, or with the store's error when etcd cannot be asked.
 */
export async function checkEtcdAccess(target: EtcdAccessTarget, write: boolean): Promise<void> {
  const { connection, prefix, origin } = target;
  const readPrefix = storeKeyPrefix(prefix);
  await asking(target, `read ${readPrefix}`, () =>
    connection.call("access check (read)", (callOptions) =>
      connection.client.kv.range(
        { key: Buffer.from(readPrefix), range_end: prefixEnd(readPrefix), count_only: true },
        callOptions,
      ),
    ),
  );
  if (!write) return;
  const subtree = originSubtreePrefix(prefix, origin);
  const subtreeKey = Buffer.from(subtree);
  await asking(target, `write ${subtree}`, () =>
    connection.call("access check (write)", (callOptions) =>
      connection.client.kv.txn(
        {
          // No key has a creation revision below 0: the success branch never runs.
          compare: [
            {
              key: subtreeKey,
              target: CompareTarget.Create,
              result: CompareResult.Less,
              create_revision: 0,
            },
          ],
          success: [{ request_delete_range: { key: subtreeKey, range_end: prefixEnd(subtree) } }],
          failure: [],
        },
        callOptions,
      ),
    ),
  );
}

/** Runs one check; turns etcd's permission denial into a {@link StorePermissionError}. */
async function asking(
  target: EtcdAccessTarget,
  what: string,
  check: () => Promise<unknown>,
): Promise<void> {
  try {
    await check();
  } catch (error) {
    if (!isPermissionDenied(error)) throw error;
    const who =
      target.user === undefined ? "this registrar's etcd user" : `etcd user ${target.user}`;
    throw new StorePermissionError(
      `permission denied: ${who} may not ${what} (a registrar needs read on ${storeKeyPrefix(target.prefix)} ` +
        `and, to export, readwrite on ${originSubtreePrefix(target.prefix, target.origin)}: ` +
        `see aetherctl etcd-rbac)`,
      { cause: error },
    );
  }
}
