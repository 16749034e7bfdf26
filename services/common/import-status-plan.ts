/**
 * What a registrar replica publishes about its imports (DESIGN.md "Fleet
 * status"; keys in status-layout.ts): the pure decisions of the status
 * publisher. From what the replica serves, what its import policy refuses,
 * what its agents report and its cluster's local config digests, the
 * desired `ServiceImportStatus` of every service; the header; the writes
 * that bring the stored values to the desired ones; and which other
 * replicas of the own cluster are dead enough to delete. Pure.
 */
import { create, equals, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  type AgentCounts,
  AgentCountsSchema,
  type ImportStatusReplica,
  ImportStatusReplicaSchema,
  type RejectedProjection,
  RejectedProjectionSchema,
  type ServiceImportStatus,
  ServiceImportStatusSchema,
} from "../../gen/aether/registry/v1/fleet_pb.js";

/** At most this many import rejections and agent rejections per service. */
export const MAX_STATUS_REJECTIONS = 8;

/** The longest rejection message kept, in UTF-8 bytes. */
export const MAX_REJECTION_MESSAGE_BYTES = 1024;

/** A replica whose header is older than this many heartbeats is deleted by a live one. */
export const STALE_REPLICA_HEARTBEATS = 10;

/** The projection a replica serves for a service (its import policy's winner). */
export interface ServedProjection {
  readonly origin: string;
  readonly version: string;
}

/** Agents by state, as plain numbers. */
export interface AgentStateCounts {
  readonly inSync: number;
  readonly behind: number;
  readonly rejecting: number;
  readonly notReady: number;
}

/** What the plan reads of the agents' reports (the registrar's `AgentReportsView`). */
export interface StatusAgents {
  /** Every service some agent reports. */
  reportedServices(): Iterable<string>;
  /** One service's agents against what is served: their counts and rejections. */
  serviceAgents(
    service: string,
    served: ServedProjection | undefined,
  ): {
    readonly tally: AgentStateCounts;
    readonly rejections: readonly {
      readonly rejection: RejectedProjection;
      readonly agents: number;
    }[];
  };
}

/** One stored projection the replica's import policy refuses. */
export interface ImportRefusal {
  readonly service: string;
  readonly origin: string;
  readonly version: string;
  readonly reason: string;
  readonly message: string;
}

/** The inputs of {@link desiredServiceStatuses}. */
export interface ImportStatusInputs {
  /** What the replica serves, by service. */
  readonly served: ReadonlyMap<string, ServedProjection>;
  /** What its import policy refuses, any order. */
  readonly refusals: readonly ImportRefusal[];
  /** Its agents' reports. */
  readonly agents: StatusAgents;
  /** The lowercase hex SHA-256 of the local projection's content, by service (local source only). */
  readonly localDigests: ReadonlyMap<string, string>;
}

/**
 * The desired status of every service the replica serves, its agents
 * report, its policy refuses or its cluster configures locally, by service:
 * import rejections at most {@link MAX_STATUS_REJECTIONS}, one per origin
 * (by origin), agent rejections at most as many (in the view's order),
 * messages cut to {@link MAX_REJECTION_MESSAGE_BYTES}.
 */
export function desiredServiceStatuses(
  inputs: ImportStatusInputs,
): Map<string, ServiceImportStatus> {
  const refusals = refusalsByService(inputs.refusals);
  const services = new Set(statusServices(inputs, refusals));
  const desired = new Map<string, ServiceImportStatus>();
  for (const service of [...services].sort()) {
    const served = inputs.served.get(service);
    desired.set(
      service,
      serviceStatus({
        service,
        served,
        refusals: refusals.get(service) ?? [],
        agents: inputs.agents.serviceAgents(service, served),
        localDigest: inputs.localDigests.get(service) ?? "",
      }),
    );
  }
  return desired;
}

/**
 * Every service that has a status: served, reported by an agent, refused
 * (`refusals` grouped by {@link refusalsByService}) or configured locally;
 * a service may come more than once.
 */
export function* statusServices(
  inputs: ImportStatusInputs,
  refusals: ReadonlyMap<string, unknown>,
): Generator<string> {
  yield* inputs.served.keys();
  yield* inputs.agents.reportedServices();
  yield* refusals.keys();
  yield* inputs.localDigests.keys();
}

/** What one service's status is made of: {@link serviceStatus}'s input. */
export interface ServiceStatusFacts {
  readonly service: string;
  readonly served: ServedProjection | undefined;
  /** The refusals of this service only. */
  readonly refusals: readonly ImportRefusal[];
  readonly agents: ReturnType<StatusAgents["serviceAgents"]>;
  /** Empty when the cluster has no local projection of it. */
  readonly localDigest: string;
}

/** One service's desired status (see {@link desiredServiceStatuses} for the bounds). */
export function serviceStatus(facts: ServiceStatusFacts): ServiceImportStatus {
  return create(ServiceImportStatusSchema, {
    service: facts.service,
    originCluster: facts.served?.origin ?? "",
    version: facts.served?.version ?? "",
    agents: agentCounts({ ...facts.agents.tally, notReady: 0 }),
    importRejections: importRejections(facts.refusals),
    agentRejections: facts.agents.rejections.slice(0, MAX_STATUS_REJECTIONS).map((r) => ({
      rejection: cutRejection(r.rejection),
      agents: r.agents,
    })),
    localDigest: facts.localDigest,
  });
}

/** The refusals grouped by service. */
export function refusalsByService(
  refusals: readonly ImportRefusal[],
): Map<string, ImportRefusal[]> {
  const byService = new Map<string, ImportRefusal[]>();
  for (const refusal of refusals) {
    const list = byService.get(refusal.service);
    if (list === undefined) byService.set(refusal.service, [refusal]);
    else list.push(refusal);
  }
  return byService;
}

/** The `AgentCounts` message of plain counts. */
export function agentCounts(tally: AgentStateCounts): AgentCounts {
  return create(AgentCountsSchema, {
    inSync: tally.inSync,
    behind: tally.behind,
    rejecting: tally.rejecting,
    notReady: tally.notReady,
  });
}

/** One refusal per origin (the newest version when an origin has several), by origin, at most 8. */
function importRejections(refusals: readonly ImportRefusal[]): RejectedProjection[] {
  const byOrigin = new Map<string, ImportRefusal>();
  for (const refusal of refusals) {
    const known = byOrigin.get(refusal.origin);
    if (known === undefined || known.version < refusal.version)
      byOrigin.set(refusal.origin, refusal);
  }
  return [...byOrigin.values()]
    .sort((a, b) => (a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : 0))
    .slice(0, MAX_STATUS_REJECTIONS)
    .map((r) =>
      cutRejection(
        create(RejectedProjectionSchema, {
          originCluster: r.origin,
          version: r.version,
          reason: r.reason,
          message: r.message,
        }),
      ),
    );
}

/** The rejection with its message cut to {@link MAX_REJECTION_MESSAGE_BYTES} (on a character boundary). */
function cutRejection(rejection: RejectedProjection): RejectedProjection {
  const encoder = new TextEncoder();
  if (encoder.encode(rejection.message).length <= MAX_REJECTION_MESSAGE_BYTES) return rejection;
  let message = rejection.message.slice(0, MAX_REJECTION_MESSAGE_BYTES);
  while (encoder.encode(message).length > MAX_REJECTION_MESSAGE_BYTES)
    message = message.slice(0, -1);
  return create(RejectedProjectionSchema, { ...rejection, message });
}

/** The binary encoding of every desired status, by service (what is compared and written). */
export function encodeStatuses(
  statuses: ReadonlyMap<string, ServiceImportStatus>,
): Map<string, Uint8Array> {
  const encoded = new Map<string, Uint8Array>();
  for (const [service, status] of statuses) {
    encoded.set(service, toBinary(ServiceImportStatusSchema, status));
  }
  return encoded;
}

/** The writes of {@link planStatusWrites}: by service, in service order. */
export interface StatusWritePlan {
  readonly puts: readonly (readonly [service: string, value: Uint8Array])[];
  readonly deletes: readonly string[];
}

/**
 * The writes that turn `written` (what the store holds under this replica,
 * by service) into `desired`: a put for every new or changed value (bytes
 * compared), a delete for every service no longer desired.
 */
export function planStatusWrites(
  desired: ReadonlyMap<string, Uint8Array>,
  written: ReadonlyMap<string, Uint8Array>,
): StatusWritePlan {
  const puts: [string, Uint8Array][] = [];
  for (const [service, value] of desired) {
    const old = written.get(service);
    if (old === value) continue;
    if (old === undefined || !sameBytes(old, value)) puts.push([service, value]);
  }
  const deletes = [...written.keys()].filter((service) => !desired.has(service));
  puts.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  deletes.sort();
  return { puts, deletes };
}

/** What the header says, apart from when it was written. */
export interface HeaderFacts {
  readonly cluster: string;
  readonly replica: string;
  readonly heartbeatMs: number;
  readonly synced: boolean;
  readonly revision: number;
  readonly controlCluster: string;
  readonly localSource: boolean;
  readonly services: number;
  readonly agents: AgentStateCounts;
}

/** The header (`ImportStatusReplica`) of `facts`, published at `nowMs`. */
export function replicaHeader(facts: HeaderFacts, nowMs: number): ImportStatusReplica {
  return create(ImportStatusReplicaSchema, {
    cluster: facts.cluster,
    replica: facts.replica,
    publishedTime: timestampFromMs(nowMs),
    heartbeatInterval: {
      seconds: BigInt(Math.floor(facts.heartbeatMs / 1000)),
      nanos: (facts.heartbeatMs % 1000) * 1_000_000,
    },
    synced: facts.synced,
    revision: BigInt(facts.revision),
    controlCluster: facts.controlCluster,
    localSource: facts.localSource,
    services: facts.services,
    agents: agentCounts(facts.agents),
  });
}

/**
 * Whether the header must be written now: none written yet, what it says
 * changed (its time aside), or the last write is a heartbeat old.
 */
export function headerDue(
  last: { readonly header: ImportStatusReplica; readonly atMs: number } | undefined,
  next: ImportStatusReplica,
  nowMs: number,
  heartbeatMs: number,
): boolean {
  if (last === undefined) return true;
  if (nowMs - last.atMs >= heartbeatMs) return true;
  const timeless = (h: ImportStatusReplica) =>
    create(ImportStatusReplicaSchema, { ...h, publishedTime: undefined });
  return !equals(ImportStatusReplicaSchema, timeless(last.header), timeless(next));
}

/** Another replica's published status, as garbage collection judges it. */
export interface ReplicaAge {
  readonly replica: string;
  /** Its header's `published_time` in milliseconds; undefined without a header. */
  readonly publishedMs: number | undefined;
  /** When the reader last saw its header change (or first saw it), reader's clock. */
  readonly seenAtMs: number;
  /** Its header's own `heartbeat_interval` in milliseconds, when it says one. */
  readonly heartbeatMs?: number;
}

/**
 * The other replicas of the own cluster to delete: those whose header's
 * `published_time` is older than {@link STALE_REPLICA_HEARTBEATS} of
 * the longer of `heartbeatMs` and its own heartbeat (replicas of one
 * cluster share its clocks closely enough),
 * a header-less one when the reader has seen it that long; never `own`, in
 * name order.
 */
export function staleReplicas(
  replicas: Iterable<ReplicaAge>,
  own: string,
  nowMs: number,
  heartbeatMs: number,
): string[] {
  const stale: string[] = [];
  for (const r of replicas) {
    if (r.replica === own) continue;
    const limit = STALE_REPLICA_HEARTBEATS * Math.max(heartbeatMs, r.heartbeatMs ?? 0);
    const since = r.publishedMs ?? r.seenAtMs;
    if (nowMs - since > limit) stale.push(r.replica);
  }
  return stale.sort();
}

/** Splits `items` into batches of at most `size`. */
export function batches<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
