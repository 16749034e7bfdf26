/**
 * What one cluster reports per service, merged over its replicas (its fresh
 * ones; a stale cluster's last values from all of them): the newest served
 * version, the agent counts summed, the rejections merged, the local
 * digest. Pure, no I/O.
 */
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type {
  AgentRejectionSummary,
  RejectedProjection,
  ServiceImportStatus,
} from "../../gen/aether/registry/v1/fleet_pb.js";
import type { ClusterReplicas, FleetReplicaInput } from "./fleet-replicas.js";
import { type FleetVersion, newestFirst } from "./fleet-versions.js";

/** The most rejections of each kind one cluster's entry of a service keeps (the newest versions). */
export const MAX_MERGED_REJECTIONS = 8;

/** Agents by state, as plain numbers. */
export interface AgentTotals {
  /** Applied the served version. */
  readonly inSync: number;
  /** Applied an older one, or none. */
  readonly behind: number;
  /** Refused the served version. */
  readonly rejecting: number;
  /** Reported, not ready (cluster totals only). */
  readonly notReady: number;
}

/** One cluster's merged report of one service. */
export interface ServiceReport {
  /** The newest version its replicas serve, with its origin; undefined when none serves one. */
  readonly served: FleetVersion | undefined;
  /** Its agents, summed over the replicas. */
  readonly agents: AgentTotals;
  /** Its registrars' import rejections, deduplicated, newest version first. */
  readonly importRejections: readonly RejectedProjection[];
  /** Its agents' rejections, one per origin, version and reason (agents summed), newest first. */
  readonly agentRejections: readonly AgentRejectionSummary[];
  /** The local digest of its newest replica that reads a local source; undefined when none does. */
  readonly localDigest: string | undefined;
}

/** One cluster's merged report. */
export interface ClusterReport {
  /** The cluster and its replicas, judged. */
  readonly replicas: ClusterReplicas;
  /** Its agents by state, from the headers of its fresh replicas (none when it is stale). */
  readonly agents: AgentTotals;
  /** Whether a replica merged reads the cluster's local config. */
  readonly localSource: boolean;
  /** Its services. */
  readonly services: ReadonlyMap<string, ServiceReport>;
}

const NO_AGENTS: AgentTotals = { inSync: 0, behind: 0, rejecting: 0, notReady: 0 };

function addAgents(a: AgentTotals, b: Partial<AgentTotals> | undefined): AgentTotals {
  if (b === undefined) return a;
  return {
    inSync: a.inSync + (b.inSync ?? 0),
    behind: a.behind + (b.behind ?? 0),
    rejecting: a.rejecting + (b.rejecting ?? 0),
    notReady: a.notReady + (b.notReady ?? 0),
  };
}

/** The key a rejection is deduplicated by: origin, version, reason. */
function rejectionKey(r: RejectedProjection | undefined): string {
  return r === undefined ? "" : `${r.originCluster}\u0000${r.version}\u0000${r.reason}`;
}

function byRejectedVersion(a: RejectedProjection | undefined, b: RejectedProjection | undefined) {
  const x = { origin: a?.originCluster ?? "", version: a?.version ?? "" };
  const y = { origin: b?.originCluster ?? "", version: b?.version ?? "" };
  return newestFirst(x, y) || (a?.reason ?? "").localeCompare(b?.reason ?? "");
}

/** Merges a cluster's replicas: its fresh ones, or all of them when it is stale. */
export function mergeCluster(replicas: ClusterReplicas): ClusterReport {
  const merged = replicas.stale ? replicas.all : replicas.fresh;
  let agents = NO_AGENTS;
  for (const r of replicas.fresh) agents = addAgents(agents, r.header?.agents);
  const values = new Map<string, { replica: FleetReplicaInput; value: ServiceImportStatus }[]>();
  for (const replica of merged) {
    for (const [service, value] of replica.services) {
      const list = values.get(service);
      if (list === undefined) values.set(service, [{ replica, value }]);
      else list.push({ replica, value });
    }
  }
  const services = new Map<string, ServiceReport>();
  for (const [service, list] of values) services.set(service, mergeService(list));
  return {
    replicas,
    agents,
    localSource: merged.some((r) => r.header?.localSource === true),
    services,
  };
}

function mergeService(
  list: readonly { replica: FleetReplicaInput; value: ServiceImportStatus }[],
): ServiceReport {
  let served: FleetVersion | undefined;
  let agents = NO_AGENTS;
  const imports = new Map<string, RejectedProjection>();
  const agentRejections = new Map<string, AgentRejectionSummary>();
  let digest: { digest: string; publishedMs: number } | undefined;
  for (const { replica, value } of list) {
    if (value.version !== "") {
      const candidate = { origin: value.originCluster, version: value.version };
      if (served === undefined || newestFirst(candidate, served) < 0) served = candidate;
    }
    agents = addAgents(agents, value.agents);
    for (const r of value.importRejections) {
      if (!imports.has(rejectionKey(r))) imports.set(rejectionKey(r), r);
    }
    for (const s of value.agentRejections) {
      const key = rejectionKey(s.rejection);
      const held = agentRejections.get(key);
      agentRejections.set(
        key,
        held === undefined ? s : { ...held, agents: held.agents + s.agents },
      );
    }
    const header = replica.header;
    if (header?.localSource === true) {
      const publishedMs =
        header.publishedTime === undefined ? 0 : timestampMs(header.publishedTime);
      if (digest === undefined || publishedMs > digest.publishedMs) {
        digest = { digest: value.localDigest, publishedMs };
      }
    }
  }
  return {
    served,
    agents: { ...agents, notReady: 0 },
    importRejections: [...imports.values()].sort(byRejectedVersion).slice(0, MAX_MERGED_REJECTIONS),
    agentRejections: [...agentRejections.values()]
      .sort((a, b) => byRejectedVersion(a.rejection, b.rejection))
      .slice(0, MAX_MERGED_REJECTIONS),
    localDigest: digest?.digest,
  };
}
