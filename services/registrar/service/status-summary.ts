/**
 * The import side of GetConfigStatus, as a pure function of what the config
 * cache maintains: a summary of each origin's projections, the rejections in
 * force and the conflicts, in the response's field shapes and orders. No
 * import-policy decision is taken here: trust, rejections and winners come
 * from the cache, which applied the policy as the changes came in.
 */
import type { ImportConflict, ImportRejection } from "../../common/import-policy.js";
import { parseVersion } from "../../common/projection-version.js";
import type { CachedProjection } from "../cache/cached-projection.js";

/** One origin's projections in the store (an `OriginStatus`). */
export interface OriginSummary {
  /** The origin cluster. */
  readonly origin: string;
  /** How many projections it has in the store. */
  readonly projections: number;
  /** The newest `version` among them, as written; empty when none parses. */
  readonly newestVersion: string;
  /** The oldest `version` among them, as written; empty when none parses. */
  readonly oldestVersion: string;
  /** Whether the import policy trusts the origin. */
  readonly trusted: boolean;
}

/** A stored projection the import policy rejects (an `ImportRejection` message). */
export interface RejectionSummary {
  /** The service. */
  readonly service: string;
  /** The origin of the refused projection. */
  readonly originCluster: string;
  /** The machine-readable reason. */
  readonly reason: string;
  /** A sentence for operators. */
  readonly message: string;
}

/** A service more than one trusted origin exports (an `ImportConflict` message). */
export interface ConflictSummary {
  /** The service. */
  readonly service: string;
  /** The origin whose projection wins. */
  readonly winnerOrigin: string;
  /** The winning projection's version. */
  readonly winnerVersion: string;
  /** The losing origins, best first. */
  readonly loserOrigins: string[];
}

/** The import fields of a GetConfigStatus response. */
export interface StatusSummary {
  /** One entry per origin with projections, by origin name. */
  readonly origins: OriginSummary[];
  /** The rejections, in the order given (by service then origin). */
  readonly rejections: RejectionSummary[];
  /** The conflicts, in the order given (by service). */
  readonly conflicts: ConflictSummary[];
}

/** What {@link summarizeStatus} reads: the cache's state, and the policy's control cluster. */
export interface StatusSources {
  /**
   * Every stored projection, by service then origin (the cache's `entries()`).
   * When two of an origin's versions are the same instant written
   * differently, the first in this order is the one reported.
   */
  readonly entries: Iterable<CachedProjection>;
  /** The rejections in force, by service then origin (the cache's `rejections()`). */
  readonly rejections: readonly ImportRejection<CachedProjection>[];
  /** The conflicts, by service (the cache's `conflicts()`). */
  readonly conflicts: readonly ImportConflict<CachedProjection>[];
  /** The control cluster; undefined in federated mode, where every origin is trusted. */
  readonly controlCluster: string | undefined;
}

/** Builds the origins, rejections and conflicts of a GetConfigStatus response. */
export function summarizeStatus(sources: StatusSources): StatusSummary {
  const { controlCluster } = sources;
  const origins = new Map<
    string,
    { count: number; newest: string; oldest: string; newestNs: bigint; oldestNs: bigint }
  >();
  for (const entry of sources.entries) {
    const ns = parseVersion(entry.projection.version);
    let summary = origins.get(entry.origin);
    if (summary === undefined) {
      summary = { count: 0, newest: "", oldest: "", newestNs: -1n, oldestNs: -1n };
      origins.set(entry.origin, summary);
    }
    summary.count++;
    if (ns !== undefined) {
      if (summary.newestNs < 0n || ns > summary.newestNs) {
        summary.newestNs = ns;
        summary.newest = entry.projection.version;
      }
      if (summary.oldestNs < 0n || ns < summary.oldestNs) {
        summary.oldestNs = ns;
        summary.oldest = entry.projection.version;
      }
    }
  }
  return {
    origins: [...origins.keys()].sort().map((origin) => {
      const summary = origins.get(origin) as { count: number; newest: string; oldest: string };
      return {
        origin,
        projections: summary.count,
        newestVersion: summary.newest,
        oldestVersion: summary.oldest,
        trusted: controlCluster === undefined || controlCluster === origin,
      };
    }),
    rejections: sources.rejections.map((r) => ({
      service: r.candidate.service,
      originCluster: r.candidate.origin,
      reason: r.reason,
      message: r.message,
    })),
    conflicts: sources.conflicts.map((c) => ({
      service: c.service,
      winnerOrigin: c.winner.origin,
      winnerVersion: c.winner.projection.version,
      loserOrigins: c.losers.map((l) => l.origin),
    })),
  };
}
