/**
 * The import side of GetConfigStatus, as a pure function of what the config
 * cache maintains: a summary of each origin's projections, the rejections in
 * force and the conflicts, in the response's field shapes and orders. No
 * import-policy decision is taken here: trust, rejections and winners come
 * from the cache, which applied the policy as the changes came in.
 *
 * Every list is bounded (20,000 junk values must not make a 50 MB response):
 * at most `limit` entries (default 100) are listed, and when more exist a
 * final synthetic entry counts them, with a `truncationNote` ("N more …
 * not shown (M in all)") in the field readers show: the `message` of a
 * rejection whose `reason` is `truncated` and whose service and origin are
 * empty; the `origin` of an origin entry (its `projections` then the
 * omitted origins' total); the `service` of a conflict. Texts are capped at
 * 1 KiB and a conflict names at most 20 losers. The response's shape cannot
 * change, so this is how a truncated list says so.
 */
import {
  boundList,
  capText,
  DEFAULT_LIST_LIMIT,
  TRUNCATED_REASON,
  truncationNote,
} from "../../common/bounded-list.js";
import type { ImportConflict, ImportRejection } from "../../common/import-policy.js";
import { SIGNATURE_FIELD } from "../../common/projection-signature.js";
import { parseVersion } from "../../common/projection-version.js";
import { fieldSpans } from "../../common/wire-fields.js";
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
  /** How many of its projections carry a signature (the rest are unsigned). */
  readonly signedProjections: number;
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
  /** One entry per origin with projections, by origin name (bounded: see the module comment). */
  readonly origins: OriginSummary[];
  /** The rejections, in the order given (by service then origin; bounded). */
  readonly rejections: RejectionSummary[];
  /** The conflicts, in the order given (by service; bounded). */
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
  /** How many entries each list holds at most, besides its final count; default 100. */
  readonly limit?: number;
}

/** How many losing origins a conflict names at most; the rest are counted in a final name. */
export const MAX_LOSERS_NAMED = 20;

/** `names` bounded to `limit`, with a final `(N more)` name counting the rest. */
export function boundNames(names: readonly string[], limit: number = MAX_LOSERS_NAMED): string[] {
  const { items, omitted } = boundList(names, limit);
  if (omitted > 0) items.push(`(${omitted} more)`);
  return items.map((name) => capText(name));
}

/**
 * Builds the origins, rejections and conflicts of a GetConfigStatus response,
 * each list bounded as the module comment says.
 */
export function summarizeStatus(sources: StatusSources): StatusSummary {
  const { controlCluster } = sources;
  const limit = sources.limit ?? DEFAULT_LIST_LIMIT;
  const origins = new Map<
    string,
    {
      count: number;
      signed: number;
      newest: string;
      oldest: string;
      newestNs: bigint;
      oldestNs: bigint;
    }
  >();
  for (const entry of sources.entries) {
    const ns = parseVersion(entry.projection.version);
    let summary = origins.get(entry.origin);
    if (summary === undefined) {
      summary = { count: 0, signed: 0, newest: "", oldest: "", newestNs: -1n, oldestNs: -1n };
      origins.set(entry.origin, summary);
    }
    summary.count++;
    if (hasSignature(entry.value)) summary.signed++;
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
  const names = [...origins.keys()].sort();
  const shownOrigins = boundList(names, limit);
  const rejections = boundList(sources.rejections, limit);
  const conflicts = boundList(sources.conflicts, limit);
  const summary: StatusSummary = {
    origins: shownOrigins.items.map((origin) => {
      const summary = origins.get(origin) as {
        count: number;
        signed: number;
        newest: string;
        oldest: string;
      };
      return {
        origin: capText(origin),
        projections: summary.count,
        newestVersion: capText(summary.newest),
        oldestVersion: capText(summary.oldest),
        trusted: controlCluster === undefined || controlCluster === origin,
        signedProjections: summary.signed,
      };
    }),
    rejections: rejections.items.map((r) => ({
      service: capText(r.candidate.service),
      originCluster: capText(r.candidate.origin),
      reason: r.reason,
      message: capText(r.message),
    })),
    conflicts: conflicts.items.map((c) => ({
      service: capText(c.service),
      winnerOrigin: capText(c.winner.origin),
      winnerVersion: capText(c.winner.projection.version),
      loserOrigins: boundNames(c.losers.map((l) => l.origin)),
    })),
  };
  if (shownOrigins.omitted > 0) {
    const hidden = names.slice(limit);
    summary.origins.push({
      origin: truncationNote(shownOrigins.omitted, names.length, "origins"),
      projections: hidden.reduce((sum, origin) => sum + (origins.get(origin)?.count ?? 0), 0),
      newestVersion: "",
      oldestVersion: "",
      trusted: false,
      signedProjections: hidden.reduce(
        (sum, origin) => sum + (origins.get(origin)?.signed ?? 0),
        0,
      ),
    });
  }
  if (rejections.omitted > 0) {
    summary.rejections.push({
      service: "",
      originCluster: "",
      reason: TRUNCATED_REASON,
      message: truncationNote(rejections.omitted, sources.rejections.length, "rejections"),
    });
  }
  if (conflicts.omitted > 0) {
    summary.conflicts.push({
      service: truncationNote(conflicts.omitted, sources.conflicts.length, "conflicts"),
      winnerOrigin: "",
      winnerVersion: "",
      loserOrigins: [],
    });
  }
  return summary;
}

/** Whether stored bytes carry a signature record (read off the top-level fields, nothing decoded). */
function hasSignature(value: Uint8Array): boolean {
  for (const span of fieldSpans(value)) {
    if (span === undefined) return false;
    if (span.field === SIGNATURE_FIELD) return true;
  }
  return false;
}
