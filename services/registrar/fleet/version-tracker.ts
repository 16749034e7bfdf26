/**
 * The versions the fleet view judges clusters against: per service, this
 * registrar's current version (the import policy's winner, from the config
 * cache's EFFECTIVE view) and the bounded history of versions it saw win
 * (`services/common/fleet-versions.ts`: newest first, at most 16). Kept only
 * for services with a winner: a service's history is dropped when its
 * winner is deleted, so memory is bounded by the services the cache holds.
 *
 * The tracker follows the cache with a subscription. While the cache is not
 * synced it cannot subscribe; {@link VersionTracker.versions} (and
 * {@link VersionTracker.resume}) subscribe again once it is, resuming after
 * the last revision seen (a replay keeps every version in between; when the
 * change log no longer holds them, the snapshot's winners join the history).
 * No timer: the fleet view calls it on every answer, scrape and feed change.
 */
import type { ServiceVersions } from "../../common/fleet-aggregate.js";
import { addToHistory } from "../../common/fleet-versions.js";
import type { CacheEvent, ConfigCache, InitialSync, Subscription } from "../cache/config-cache.js";
import { StoreUnavailableError } from "../store/config-store.js";

/** What the tracker reads of the config cache. */
export type TrackedCache = Pick<ConfigCache, "state" | "subscribe">;

/** The current versions and their history, per service. */
export interface VersionTracker {
  /** Subscribes to the cache when it is synced and the tracker is not subscribed yet. */
  resume(): void;
  /** The versions per service (services without a winner absent), after {@link resume}. */
  versions(): ReadonlyMap<string, ServiceVersions>;
  /** Ends the subscription; idempotent. */
  stop(): void;
}

/** Creates a tracker over `cache` and subscribes when the cache is synced. */
export function createVersionTracker(cache: TrackedCache): VersionTracker {
  let versions = new Map<string, ServiceVersions>();
  let subscription: Subscription | undefined;
  let revision = 0;
  let stopped = false;

  const apply = (events: readonly CacheEvent[]) => {
    for (const event of events) {
      revision = Math.max(revision, event.revision);
      if (event.type === "delete" || event.entry === undefined) {
        versions.delete(event.service);
        continue;
      }
      const current = { origin: event.entry.origin, version: event.entry.projection.version };
      const history = addToHistory(versions.get(event.service)?.history ?? [], current);
      versions.set(event.service, { current, history });
    }
  };

  const applyInitial = (initial: InitialSync) => {
    if (initial.kind === "replay") {
      apply(initial.events);
    } else {
      const next = new Map<string, ServiceVersions>();
      for (const entry of initial.entries) {
        const current = { origin: entry.origin, version: entry.projection.version };
        const history = addToHistory(versions.get(entry.service)?.history ?? [], current);
        next.set(entry.service, { current, history });
      }
      versions = next;
    }
    revision = initial.revision;
  };

  const resume = () => {
    if (stopped || subscription !== undefined || cache.state !== "synced") return;
    let opened: Subscription;
    try {
      opened = cache.subscribe({
        view: "effective",
        resumeRevision: revision,
        onEvents: apply,
        onClose: () => {
          subscription = undefined;
        },
      });
    } catch (error) {
      // The cache lost the store since its state was read: try again on the next call.
      if (error instanceof StoreUnavailableError) return;
      throw error;
    }
    subscription = opened;
    applyInitial(opened.initial);
  };

  resume();
  return {
    resume,
    versions() {
      resume();
      return versions;
    },
    stop() {
      stopped = true;
      subscription?.unsubscribe();
      subscription = undefined;
    },
  };
}
