/**
 * Counts the writes to the shared store under `<prefix>/clusters/` with one
 * raw etcd watch (put and delete events, as etcd delivers them), by what
 * the key names: a projection (`config`, parseProjectionKey), a published
 * status (`status`, parseStatusKey: a replica header or a service's
 * status), or anything else. It also remembers, per service, the version
 * of the first put of the hub's projection at each edit number (see
 * burst-plan.ts), so the burst knows which version is its final one.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import { parseStatusKey } from "../../services/common/status-layout.js";
import {
  createEtcdClient,
  openEtcdWatch,
  prefixEnd,
} from "../../services/registrar/store/etcd-store.js";
import { parseProjectionKey } from "../../services/registrar/store/store-key.js";
import { editMarker } from "./burst-plan.js";

/** What a key under `<prefix>/clusters/` names, for counting. */
export type WriteKind = "config" | "statusReplica" | "statusService" | "other";

/** Writes (put and delete events) by kind. */
export type WriteCounts = Record<WriteKind, number>;

/** The kind of `key` under `prefix`. */
export function classifyKey(prefix: string, key: string): WriteKind {
  if (parseProjectionKey(prefix, key) !== undefined) return "config";
  const status = parseStatusKey(prefix, key);
  if (status === undefined) return "other";
  return status.kind === "replica" ? "statusReplica" : "statusService";
}

/** `after − before`, per kind. */
export function countsBetween(before: WriteCounts, after: WriteCounts): WriteCounts {
  return {
    config: after.config - before.config,
    statusReplica: after.statusReplica - before.statusReplica,
    statusService: after.statusService - before.statusService,
    other: after.other - before.other,
  };
}

/** A running counter. */
export interface WriteCounter {
  /** The counts so far (a copy). */
  counts(): WriteCounts;
  /** The version of the first put of `origin`'s projection of `service` at edit `edit`, if seen. */
  versionAt(service: string, edit: number): string | undefined;
  /** Called after every batch of events (one listener; undefined removes it). */
  onChange(listener: (() => void) | undefined): void;
  /** The watch's failure, if it failed. */
  readonly failure: () => Error | undefined;
  close(): void;
}

/** Opens the watch on `<prefix>/clusters/` from the revision after the current one. */
export async function openWriteCounter(
  endpoint: string,
  prefix: string,
  origin: string,
): Promise<WriteCounter> {
  const client = createEtcdClient([endpoint]);
  const base = `${prefix}/clusters/`;
  const current = await client.get(base).exec();
  const counts: WriteCounts = { config: 0, statusReplica: 0, statusService: 0, other: 0 };
  const versions = new Map<string, Map<number, string>>();
  let listener: (() => void) | undefined;
  let failure: Error | undefined;
  const stop = openEtcdWatch(
    client,
    {
      key: Buffer.from(base),
      rangeEnd: prefixEnd(base),
      startRevision: Number(current.header.revision) + 1,
      requestTimeoutMs: 10_000,
      probeIntervalMs: 3_600_000,
    },
    {
      changes(changes) {
        for (const change of changes) {
          counts[classifyKey(prefix, change.key)]++;
          if (change.type !== "put") continue;
          const parts = parseProjectionKey(prefix, change.key);
          if (parts === undefined || parts.origin !== origin) continue;
          const edit = editMarker(change.value) ?? 0;
          const byEdit = versions.get(parts.service) ?? new Map<number, string>();
          if (!byEdit.has(edit)) {
            byEdit.set(edit, fromBinary(ServiceConfigProjectionSchema, change.value).version);
          }
          versions.set(parts.service, byEdit);
        }
        listener?.();
      },
      error(error) {
        failure = error;
        listener?.();
      },
    },
  );
  return {
    counts: () => ({ ...counts }),
    versionAt: (service, edit) => versions.get(service)?.get(edit),
    onChange(next) {
      listener = next;
    },
    failure: () => failure,
    close() {
      stop();
      client.close();
    },
  };
}
