/**
 * The seams between the fleet-status parts of a registrar (see README.md):
 * the agents' reports (`agent-table`), what the replica publishes
 * (`status-publisher`), what every cluster published (`status-feed`) and the
 * fleet view (`fleet-view`). Types only.
 */
import type {
  ImportStatusReplica,
  RejectedProjection,
  ServiceImportStatus,
} from "../../../gen/aether/registry/v1/fleet_pb.js";

/** Agents by state (`AgentCounts` of the contract, as plain numbers). */
export interface AgentTally {
  /** Applied the served version. */
  readonly inSync: number;
  /** Applied an older one, or none, while one is served. */
  readonly behind: number;
  /** Refused the served version. */
  readonly rejecting: number;
  /** Reported, not ready (totals only; 0 per service). */
  readonly notReady: number;
}

/** The projection a replica serves for a service: the import policy's winner. */
export interface ServedVersion {
  /** Its origin. */
  readonly origin: string;
  /** Its version. */
  readonly version: string;
}

/** One kind of refusal among a replica's agents. */
export interface AgentRejectionTally {
  /** The refused projection and why (the message of one of the agents). */
  readonly rejection: RejectedProjection;
  /** How many agents refused it so. */
  readonly agents: number;
}

/**
 * The agents' reports to this replica, as the publisher reads them. Each
 * method judges the agents against `served` (what the replica serves now),
 * so a change of the served version re-judges them without a new report.
 */
export interface AgentReportsView {
  /** Every service some tracked agent reports, in no particular order. */
  reportedServices(): Iterable<string>;
  /** One service's agents: their tally (`notReady` 0) and rejections (at most 8, newest version first). */
  serviceAgents(
    service: string,
    served: ServedVersion | undefined,
  ): { readonly tally: AgentTally; readonly rejections: readonly AgentRejectionTally[] };
  /** Every tracked agent once, by its worst service (rejecting, behind, in sync), or not ready. */
  totals(served: (service: string) => ServedVersion | undefined): AgentTally;
  /**
   * Calls `listener` (synchronously, after the change) whenever an accepted
   * report changed what an agent reports, or an agent was forgotten. Returns
   * the unsubscribe function.
   */
  onChange(listener: () => void): () => void;
}

/** One replica's published status, as a reader of the store holds it. */
export interface PublishedReplica {
  /** The cluster, from the key path. */
  readonly cluster: string;
  /** The replica, from the key path. */
  readonly replica: string;
  /** Its header; undefined until one was read (or when it does not decode). */
  readonly header: ImportStatusReplica | undefined;
  /** Its service values, by service (from the key path). */
  readonly services: ReadonlyMap<string, ServiceImportStatus>;
  /**
   * When this reader last saw the header change, on the reader's clock
   * (milliseconds since the epoch): with the header's own `published_time`,
   * what staleness is judged by, so that neither clock alone decides.
   */
  readonly seenAtMs: number;
}

/** Every cluster's published status, kept current from the store. */
export interface StatusFeed {
  /** Whether the feed has listed the store once and follows it. */
  readonly synced: boolean;
  /** Every replica of every cluster, in no particular order. */
  replicas(): Iterable<PublishedReplica>;
  /** Calls `listener` after every change applied. Returns the unsubscribe function. */
  onChange(listener: () => void): () => void;
}
