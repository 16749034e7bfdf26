/**
 * The agent's use of its last-known cache. On start the cached state is
 * restored with every imported projection checked again like a received
 * one (one the policy now refuses is dropped and reported), and the cached
 * local projections are served until the local source has synced. A save is
 * skipped when the content ({@link cacheFingerprint}) is what was saved or
 * loaded last, so an unchanged state never rewrites the file.
 */
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import type { ImportCandidate, ImportPolicy } from "../../services/common/import-policy.js";
import type { Logger } from "../../services/runtime/logger.js";
import { createRateLimitedLog } from "../../services/runtime/rate-limited-log.js";
import type { FollowerState } from "./follower/imported-state.js";
import {
  candidateKey,
  checkReceived,
  type ReceivedRejection,
} from "./follower/received-projection.js";
import type { CachedState, LastKnownCache } from "./last-known-cache.js";
import { cacheFingerprint } from "./route-table-feed.js";

/** A state restored from the cache. */
export interface RestoredState {
  /** The imported state: the accepted cached projections, at the cached revision. */
  readonly state: FollowerState;
  /** The cached local projections, by service. */
  readonly local: ReadonlyMap<string, ServiceConfigProjection>;
}

/**
 * Restores a cached state: its imported projections are checked with
 * {@link checkReceived} against its own dependency set and `policy`; the
 * refused ones are left out and returned as `dropped`. Pure.
 */
export function restoreCachedState(
  cached: CachedState,
  policy: ImportPolicy,
): { readonly restored: RestoredState; readonly dropped: readonly ReceivedRejection[] } {
  const requested = new Set(cached.services);
  const candidates = new Map<string, ImportCandidate>();
  const dropped: ReceivedRejection[] = [];
  for (const entry of cached.imported) {
    const result = checkReceived(entry, requested, policy);
    if (result.candidate !== undefined) {
      candidates.set(candidateKey(entry.origin, entry.service), result.candidate);
    } else {
      dropped.push(result.rejection);
    }
  }
  const state = {
    services: cached.services,
    revision: cached.revision,
    candidates,
    marks: cached.marks ?? [],
  };
  return { restored: { state, local: new Map(cached.local.map((p) => [p.service, p])) }, dropped };
}

/** Options of {@link createCachedStateStore}. */
export interface CachedStateStoreOptions {
  /** The cache file. */
  readonly cache: LastKnownCache;
  /** The import policy cached projections are checked with again. */
  readonly policy: ImportPolicy;
  /** Logger. */
  readonly logger: Logger;
  /** Called with each cached projection dropped on load, before it is logged. */
  onDropped(rejection: ReceivedRejection): void;
}

/** The cache as the agent uses it; see the module comment. */
export interface CachedStateStore {
  /** Reads and restores the cache; undefined when there is none (or it is unusable). */
  load(): Promise<RestoredState | undefined>;
  /** Saves the imported state and the local projections, unless they are what was saved last. */
  save(state: FollowerState, local: ReadonlyMap<string, ServiceConfigProjection>): void;
  /** Resolves once every scheduled save has finished. */
  flush(): Promise<void>;
}

/** Creates the store over a cache. */
export function createCachedStateStore(options: CachedStateStoreOptions): CachedStateStore {
  const { cache, logger } = options;
  let savedFingerprint: string | undefined;
  return {
    async load() {
      const cached = await cache.load();
      if (cached === undefined) return undefined;
      const { restored, dropped } = restoreCachedState(cached, options.policy);
      // A few lines, then one counting the rest: a cache of thousands of stale entries.
      const droppedLog = createRateLimitedLog(logger);
      for (const rejection of dropped) {
        options.onDropped(rejection);
        droppedLog.warn(
          "cached-projection-dropped",
          { reason: rejection.reason },
          `cached projection dropped: ${rejection.message}`,
        );
      }
      droppedLog.flush();
      savedFingerprint = cacheFingerprint(restored.state, restored.local);
      logger.info(
        {
          revision: String(cached.revision),
          projections: restored.state.candidates.size,
          local: restored.local.size,
          savedAt: cached.savedAt?.toISOString(),
        },
        "serving the last-known cache",
      );
      return restored;
    },
    save(state, local) {
      const fingerprint = cacheFingerprint(state, local);
      if (fingerprint === savedFingerprint) return;
      savedFingerprint = fingerprint;
      cache.save({
        revision: state.revision,
        services: state.services,
        imported: [...state.candidates.values()],
        local: [...local.values()],
        marks: state.marks ?? [],
      });
    },
    flush: () => cache.flush(),
  };
}
