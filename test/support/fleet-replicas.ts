/**
 * Published import status for fleet-view tests: replicas with a header and
 * service values, built from a few plain fields.
 */
import { create } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  type AgentRejectionSummary,
  AgentRejectionSummarySchema,
  ImportStatusReplicaSchema,
  type RejectedProjection,
  RejectedProjectionSchema,
  type ServiceImportStatus,
  ServiceImportStatusSchema,
} from "../../gen/aether/registry/v1/fleet_pb.js";
import type { FleetReplicaInput } from "../../services/common/fleet-replicas.js";

/** The heartbeat interval of the replicas {@link replica} builds, in ms. */
export const HEARTBEAT_MS = 10_000;

/** One service value: origin@version, agents (in sync, behind, rejecting), rejections, digest. */
export interface ServiceFields {
  readonly origin?: string;
  readonly version?: string;
  readonly agents?: readonly [number, number, number];
  readonly importRejections?: readonly RejectedProjection[];
  readonly agentRejections?: readonly AgentRejectionSummary[];
  readonly digest?: string;
}

/** What {@link replica} builds a replica from. */
export interface ReplicaFields {
  readonly cluster: string;
  readonly replica?: string;
  /** The header's published time (ms); undefined: no header at all. */
  readonly publishedMs: number | undefined;
  /** When the reader saw the header change (ms); default `publishedMs`. */
  readonly seenAtMs?: number;
  readonly localSource?: boolean;
  /** The replica's agent totals: in sync, behind, rejecting, not ready. */
  readonly agents?: readonly [number, number, number, number];
  readonly services?: Readonly<Record<string, ServiceFields>>;
}

/** A rejected projection. */
export function rejected(origin: string, version: string, reason: string): RejectedProjection {
  return create(RejectedProjectionSchema, {
    originCluster: origin,
    version,
    reason,
    message: `${reason} of ${origin}@${version}`,
  });
}

/** An agent rejection summary. */
export function agentRejected(
  origin: string,
  version: string,
  reason: string,
  agents: number,
): AgentRejectionSummary {
  return create(AgentRejectionSummarySchema, {
    rejection: rejected(origin, version, reason),
    agents,
  });
}

function serviceValue(service: string, f: ServiceFields): ServiceImportStatus {
  const [inSync, behind, rejecting] = f.agents ?? [0, 0, 0];
  return create(ServiceImportStatusSchema, {
    service,
    originCluster: f.origin ?? "",
    version: f.version ?? "",
    agents: { inSync, behind, rejecting },
    importRejections: [...(f.importRejections ?? [])],
    agentRejections: [...(f.agentRejections ?? [])],
    localDigest: f.digest ?? "",
  });
}

/** A published replica. */
export function replica(f: ReplicaFields): FleetReplicaInput {
  const [inSync, behind, rejecting, notReady] = f.agents ?? [0, 0, 0, 0];
  const services = new Map(
    Object.entries(f.services ?? {}).map(([s, v]) => [s, serviceValue(s, v)] as const),
  );
  return {
    cluster: f.cluster,
    replica: f.replica ?? "r0",
    header:
      f.publishedMs === undefined
        ? undefined
        : create(ImportStatusReplicaSchema, {
            cluster: f.cluster,
            replica: f.replica ?? "r0",
            publishedTime: timestampFromMs(f.publishedMs),
            heartbeatInterval: durationFromMs(HEARTBEAT_MS),
            synced: true,
            localSource: f.localSource ?? false,
            services: services.size,
            agents: { inSync, behind, rejecting, notReady },
          }),
    services,
    seenAtMs: f.seenAtMs ?? f.publishedMs ?? 0,
  };
}
