/**
 * The fleet view's first step: every published replica judged fresh or
 * stale, grouped by cluster (see `fleet-cluster-merge.ts` for what a
 * cluster then reports per service). Pure, no I/O: `now` is an input.
 */
import { durationMs, timestampMs } from "@bufbuild/protobuf/wkt";
import type {
  ImportStatusReplica,
  ServiceImportStatus,
} from "../../gen/aether/registry/v1/fleet_pb.js";

/** How many heartbeat intervals a replica may stay silent before it is stale. */
export const STALE_AFTER_HEARTBEATS = 3;

/**
 * One replica's published status as the fleet view reads it (the shape of
 * the registrar's `PublishedReplica`).
 */
export interface FleetReplicaInput {
  /** The cluster, from the key path. */
  readonly cluster: string;
  /** The replica, from the key path. */
  readonly replica: string;
  /** Its header; undefined until one was read. */
  readonly header: ImportStatusReplica | undefined;
  /** Its service values, by service. */
  readonly services: ReadonlyMap<string, ServiceImportStatus>;
  /** When the reader last saw the header change, on the reader's clock (ms since the epoch). */
  readonly seenAtMs: number;
}

/** One cluster's replicas, judged. */
export interface ClusterReplicas {
  /** The cluster. */
  readonly cluster: string;
  /** Its fresh replicas. */
  readonly fresh: readonly FleetReplicaInput[];
  /** Every replica, stale ones included. */
  readonly all: readonly FleetReplicaInput[];
  /** True when every replica is stale. */
  readonly stale: boolean;
  /** The newest `published_time` among its replicas (ms); undefined when none has one. */
  readonly lastReportMs: number | undefined;
}

/**
 * Whether a replica is stale at `nowMs`: it has no header, no heartbeat
 * interval or no publish time, or more than three intervals passed since
 * its `published_time` (the publisher's clock) or since the reader saw the
 * header change (`seenAtMs`, the reader's clock): either clock can lie, so
 * neither alone keeps a replica fresh.
 */
export function isReplicaStale(replica: FleetReplicaInput, nowMs: number): boolean {
  const header = replica.header;
  if (header?.heartbeatInterval === undefined || header.publishedTime === undefined) return true;
  const intervalMs = durationMs(header.heartbeatInterval);
  if (!(intervalMs > 0)) return true;
  const limit = STALE_AFTER_HEARTBEATS * intervalMs;
  return nowMs - timestampMs(header.publishedTime) > limit || nowMs - replica.seenAtMs > limit;
}

/** Groups replicas by cluster (sorted by cluster name), each judged fresh or stale at `nowMs`. */
export function groupReplicas(
  replicas: Iterable<FleetReplicaInput>,
  nowMs: number,
): ClusterReplicas[] {
  const byCluster = new Map<string, FleetReplicaInput[]>();
  for (const replica of replicas) {
    const list = byCluster.get(replica.cluster);
    if (list === undefined) byCluster.set(replica.cluster, [replica]);
    else list.push(replica);
  }
  return [...byCluster.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([cluster, all]) => {
      all.sort((a, b) => (a.replica < b.replica ? -1 : a.replica > b.replica ? 1 : 0));
      const fresh = all.filter((r) => !isReplicaStale(r, nowMs));
      let lastReportMs: number | undefined;
      for (const r of all) {
        if (r.header?.publishedTime === undefined) continue;
        const ms = timestampMs(r.header.publishedTime);
        if (lastReportMs === undefined || ms > lastReportMs) lastReportMs = ms;
      }
      return { cluster, fresh, all, stale: fresh.length === 0, lastReportMs };
    });
}
