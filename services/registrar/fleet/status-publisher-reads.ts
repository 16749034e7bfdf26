/**
 * What the status publisher (status-publisher.ts) reads, as plain
 * functions: its own old values from the store, what the cache serves and
 * refuses, the service values' writes, and the keys of the own cluster's
 * dead replicas.
 */
import { toBinary } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import {
  type ImportStatusReplica,
  ServiceImportStatusSchema,
} from "../../../gen/aether/registry/v1/fleet_pb.js";
import type { StatusEncoder } from "../../common/import-status-memo.js";
import {
  type ImportRefusal,
  planStatusWrites,
  type ServedProjection,
  type StatusAgents,
  staleReplicas,
} from "../../common/import-status-plan.js";
import { replicaHeaderKey, serviceStatusKey } from "../../common/status-layout.js";
import type { ConfigCache } from "../cache/config-cache.js";
import type { StatusStore, StatusWrite } from "../store/status-store.js";
import type { StatusFeed } from "./fleet-inputs.js";

/** Where one replica's values live: the store's prefix, its cluster and the replica. */
export interface ReplicaPlace {
  readonly prefix: string;
  readonly cluster: string;
  readonly replica: string;
}

/** The replica's values in the store, by service, and its header with its time. */
export async function readOwnValues(
  store: Pick<StatusStore, "list">,
  place: ReplicaPlace,
): Promise<{
  readonly values: Map<string, Uint8Array>;
  readonly header: { readonly header: ImportStatusReplica; readonly atMs: number } | undefined;
}> {
  const values = new Map<string, Uint8Array>();
  let header: { header: ImportStatusReplica; atMs: number } | undefined;
  for (const entry of (await store.list(place.cluster)).entries) {
    if (entry.replica !== place.replica) continue;
    if (entry.kind === "service") {
      values.set(entry.service, toBinary(ServiceImportStatusSchema, entry.status));
    } else if (entry.header.publishedTime !== undefined) {
      header = { header: entry.header, atMs: timestampMs(entry.header.publishedTime) };
    }
  }
  return { values, header };
}

/** What the cache serves (its import policy's winners), by service; undefined while not synced. */
export function servedProjections(
  cache: Pick<ConfigCache, "state" | "snapshot">,
): Map<string, ServedProjection> | undefined {
  if (cache.state !== "synced") return undefined;
  const map = new Map<string, ServedProjection>();
  for (const entry of cache.snapshot(undefined, "effective").entries) {
    map.set(entry.service, { origin: entry.origin, version: entry.projection.version });
  }
  return map;
}

/** The inputs of {@link serviceWrites} besides what is served. */
export interface ServiceWriteInputs {
  readonly cache: Pick<ConfigCache, "rejections">;
  readonly agents: StatusAgents;
  readonly localDigests: ReadonlyMap<string, string>;
  /** Encodes the desired statuses, remembering the unchanged ones (one per publisher). */
  readonly encoder: StatusEncoder;
}

/**
 * The writes that bring `written` (what the store holds, by service) to the
 * desired service values, how many services are desired, and `settle`,
 * which makes `written` what the store holds once the writes landed (in
 * place: a round allocates nothing for what did not change). With nothing
 * served (cache not synced) nothing is written and `written` stays.
 */
export function serviceWrites(
  place: ReplicaPlace,
  served: Map<string, ServedProjection> | undefined,
  written: Map<string, Uint8Array>,
  inputs: ServiceWriteInputs,
): { services: number; changes: StatusWrite[]; settle: () => void } {
  if (served === undefined) return { services: written.size, changes: [], settle: () => {} };
  const refusals: ImportRefusal[] = inputs.cache.rejections().map((r) => ({
    service: r.candidate.service,
    origin: r.candidate.origin,
    version: r.candidate.projection.version,
    reason: r.reason,
    message: r.message,
  }));
  const desired = inputs.encoder.encode({
    served,
    refusals,
    agents: inputs.agents,
    localDigests: inputs.localDigests,
  });
  const plan = planStatusWrites(desired, written);
  const key = (service: string) =>
    serviceStatusKey(place.prefix, place.cluster, place.replica, service);
  const changes: StatusWrite[] = [
    ...plan.puts.map(([service, value]) => ({ type: "put" as const, key: key(service), value })),
    ...plan.deletes.map((service) => ({ type: "delete" as const, key: key(service) })),
  ];
  const settle = () => {
    for (const [service, value] of plan.puts) written.set(service, value);
    for (const service of plan.deletes) written.delete(service);
  };
  return { services: desired.size, changes, settle };
}

/**
 * The own cluster's dead replicas (see `staleReplicas`) with every key the
 * feed holds of each; none until the feed has synced.
 */
export function deadReplicaKeys(
  feed: StatusFeed,
  place: ReplicaPlace,
  nowMs: number,
  heartbeatMs: number,
): { readonly replica: string; readonly keys: string[] }[] {
  if (!feed.synced) return [];
  const { prefix, cluster } = place;
  const mine = [...feed.replicas()].filter((r) => r.cluster === cluster);
  const ages = mine.map((r) => ({
    replica: r.replica,
    publishedMs:
      r.header?.publishedTime === undefined ? undefined : timestampMs(r.header.publishedTime),
    seenAtMs: r.seenAtMs,
    ...(r.header?.heartbeatInterval === undefined
      ? {}
      : { heartbeatMs: Number(r.header.heartbeatInterval.seconds) * 1000 }),
  }));
  return staleReplicas(ages, place.replica, nowMs, heartbeatMs).map((dead) => {
    const services = mine.find((r) => r.replica === dead)?.services.keys() ?? [];
    return {
      replica: dead,
      keys: [
        replicaHeaderKey(prefix, cluster, dead),
        ...[...services].map((s) => serviceStatusKey(prefix, cluster, dead, s)),
      ],
    };
  });
}
