/**
 * The write operations of the etcd store (`put`, `delete`, `write`): plain
 * requests, or, with a fence, one etcd transaction that applies only while
 * the fence key still has the fence's creation revision, so a deposed
 * leader's write cannot land.
 */
import { CompareResult, CompareTarget, type IRequestOp } from "etcd3";
import type { ServiceConfigProjection } from "../../../gen/aether/registry/v1/projection_pb.js";
import {
  type ConfigStore,
  FencedWriteError,
  type StoreWrite,
  type WriteFence,
  type WriteOptions,
} from "./config-store.js";
import {
  assertServiceKey,
  type EntryDecoder,
  encodeProjection,
  encodeWriteBatch,
} from "./decode-entry.js";
import type { EtcdConnection } from "./etcd-connection.js";
import { projectionKey } from "./store-key.js";

/** What {@link createEtcdWrites} writes through and under. */
export interface EtcdWritesContext {
  /** The store's connection; every request goes through its `call`. */
  readonly connection: EtcdConnection;
  /** The store's normalized key prefix. */
  readonly prefix: string;
  /** The origin every write is keyed and stamped with. */
  readonly origin: string;
  /** The store's decoder, whose counters a batch's encoding updates. */
  readonly decoder: EntryDecoder;
}

/**
 * Returns the etcd store's `put`, `delete` and `write`, with the
 * {@link ConfigStore} contract: each resolves to the revision of the change
 * (`delete` to undefined when nothing was deleted, an empty `write` to the
 * current revision) and rejects with {@link FencedWriteError}, changing
 * nothing, when a given fence no longer holds.
 */
export function createEtcdWrites(
  context: EtcdWritesContext,
): Pick<ConfigStore, "put" | "delete" | "write"> {
  const { connection, prefix, origin, decoder } = context;
  const { client } = connection;
  const call = connection.callWrite;
  return {
    put: async (projection: ServiceConfigProjection, writeOptions?: WriteOptions) => {
      const key = Buffer.from(projectionKey(prefix, origin, projection.service));
      const value = Buffer.from(encodeProjection(projection, origin));
      const fence = writeOptions?.fence;
      if (fence === undefined) {
        const response = await call("put", (callOptions) =>
          client.kv.put({ key, value }, callOptions),
        );
        return Number(response.header.revision);
      }
      const response = await fencedTxn(connection, "put", fence, { request_put: { key, value } });
      return Number(response.header.revision);
    },
    delete: async (service: string, writeOptions?: WriteOptions) => {
      assertServiceKey(service);
      const key = Buffer.from(projectionKey(prefix, origin, service));
      const fence = writeOptions?.fence;
      let deleted: string;
      let revision: string;
      if (fence === undefined) {
        const response = await call("delete", (callOptions) =>
          client.kv.deleteRange({ key }, callOptions),
        );
        ({ deleted } = response);
        revision = response.header.revision;
      } else {
        const response = await fencedTxn(connection, "delete", fence, {
          request_delete_range: { key },
        });
        deleted = response.responses[0]?.response_delete_range.deleted ?? "0";
        revision = response.header.revision;
      }
      return deleted === "0" ? undefined : Number(revision);
    },
    write: async (changes: readonly StoreWrite[], writeOptions?: WriteOptions) => {
      const encoded = encodeWriteBatch(prefix, origin, changes, decoder);
      if (encoded.length === 0) return connection.currentRevision("write");
      const operations: IRequestOp[] = encoded.map(({ key, value }) =>
        value === undefined
          ? { request_delete_range: { key: Buffer.from(key) } }
          : { request_put: { key: Buffer.from(key), value: Buffer.from(value) } },
      );
      const fence = writeOptions?.fence;
      if (fence === undefined) {
        const response = await call("write", (callOptions) =>
          client.kv.txn({ compare: [], success: operations }, callOptions),
        );
        return Number(response.header.revision);
      }
      const response = await fencedTxn(connection, "write", fence, operations);
      return Number(response.header.revision);
    },
  };
}

/**
 * Runs `operation` (one or several) in a transaction guarded by `fence` (the fence key's
 * creation revision must still be the fence's); rejects with
 * {@link FencedWriteError} when the guard fails.
 */
async function fencedTxn(
  connection: EtcdConnection,
  what: string,
  fence: WriteFence,
  operation: IRequestOp | readonly IRequestOp[],
) {
  const response = await connection.callWrite(what, (callOptions) =>
    connection.client.kv.txn(
      {
        compare: [
          {
            key: Buffer.from(fence.key),
            target: CompareTarget.Create,
            result: CompareResult.Equal,
            create_revision: fence.createRevision,
          },
        ],
        success: Array.isArray(operation) ? [...operation] : [operation as IRequestOp],
      },
      callOptions,
    ),
  );
  if (!response.succeeded) {
    throw new FencedWriteError(
      `fenced ${what} refused: ${fence.key} no longer has creation revision ${fence.createRevision}`,
      fence,
    );
  }
  return response;
}
