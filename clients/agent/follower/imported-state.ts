/**
 * The follower's imported state: the last complete state (every accepted
 * origin's projection of the dependency set, at a registrar revision), the
 * resume point a new stream continues from, and the candidate set that turns
 * received changes into new states. Each new state is reported through
 * `onUpdate` with the candidates whose content is new; each rejection not
 * reported before is logged (rate-limited: a few lines a minute, then a
 * count) and reported through `onRejection`, before the state it was met
 * building. The state is never touched by a failure:
 * only a complete state (a SYNCED, a streamed change, a listing) replaces it.
 */
import type { ImportCandidate, ImportPolicy } from "../../../services/common/import-policy.js";
import type { Logger } from "../../../services/runtime/logger.js";
import { createRateLimitedLog } from "../../../services/runtime/rate-limited-log.js";
import { createCandidateSet, freshCandidates, type ReceivedChange } from "./candidate-set.js";
import type { ReceivedRejection } from "./received-projection.js";

/** The imported state: complete for a dependency set, at a registrar revision. */
export interface FollowerState {
  /** The dependency set the state is complete for, sorted. */
  readonly services: readonly string[];
  /** The registrar store revision the state is consistent with. */
  readonly revision: bigint;
  /** Every accepted origin's projection, keyed by {@link candidateKey}. */
  readonly candidates: ReadonlyMap<string, ImportCandidate>;
}

/** A new state, and how it came. */
export interface FollowerUpdate {
  /** The new state. */
  readonly state: FollowerState;
  /** A stream snapshot or resume (`synced`), a streamed change (`change`), or a poll (`poll`). */
  readonly via: "synced" | "change" | "poll";
  /** The candidates whose version the previous state did not hold (new content). */
  readonly fresh: readonly ImportCandidate[];
  /** True when there was no previous state (neither from the cache nor received). */
  readonly first: boolean;
}

/** Options of {@link createImportedState}. */
export interface ImportedStateOptions {
  /** The import policy every received projection is checked with. */
  readonly policy: ImportPolicy;
  /** The dependency set, normalized (unique, sorted). */
  readonly services: readonly string[];
  /** A state to start from (the last-known cache); it is not reported. */
  readonly initial: FollowerState | undefined;
  /** Where rejections are logged. */
  readonly logger: Logger;
  /** Called with each new state. */
  onUpdate?(update: FollowerUpdate): void;
  /** Called with each rejection not reported before. */
  onRejection?(rejection: ReceivedRejection): void;
}

/** The held state and the ways it changes; see the module comment. */
export interface ImportedState {
  /** The current state; undefined until an initial or a first complete state. */
  readonly state: FollowerState | undefined;
  /** The state's revision, advanced by later events and keep-alives. */
  readonly resumePoint: bigint;
  /** The dependency set, normalized; new states are complete for it. */
  readonly services: readonly string[];
  /** Replaces the dependency set (normalized); the current state stays until the next one. */
  setServices(services: readonly string[]): void;
  /** A SYNCED: `changes` replace the state (or, `resumed`, are applied to it) at `revision`. */
  synced(resumed: boolean, revision: bigint, changes: readonly ReceivedChange[]): void;
  /** A streamed change at `revision`: a new state when it changes the candidates. */
  change(revision: bigint, change: ReceivedChange): void;
  /** Advances the resume point to `revision`. */
  advance(revision: bigint): void;
  /** A complete listing at `revision`: its changes replace the state. */
  listed(revision: bigint, changes: readonly ReceivedChange[]): void;
}

/** Creates the held state. */
export function createImportedState(options: ImportedStateOptions): ImportedState {
  const { logger } = options;
  let services = options.services;
  const candidates = createCandidateSet({ policy: options.policy, services });
  const rejectionLog = createRateLimitedLog(logger);
  let state = options.initial;
  let resumePoint = state?.revision ?? 0n;

  const report = (rejections: readonly ReceivedRejection[]) => {
    for (const rejection of rejections) {
      rejectionLog.warn(
        "projection-rejection",
        { origin: rejection.origin, service: rejection.service, reason: rejection.reason },
        `projection rejected: ${rejection.message}`,
      );
      options.onRejection?.(rejection);
    }
  };

  const commit = (
    next: Map<string, ImportCandidate>,
    revision: bigint,
    via: FollowerUpdate["via"],
  ) => {
    const previous = state?.candidates;
    const fresh = freshCandidates(previous, next);
    resumePoint = revision;
    state = { services, revision, candidates: next };
    options.onUpdate?.({ state, via, fresh, first: previous === undefined });
  };

  return {
    get state() {
      return state;
    },
    get resumePoint() {
      return resumePoint;
    },
    get services() {
      return services;
    },
    setServices(next) {
      services = next;
      candidates.setServices(next);
    },
    synced(resumed, revision, changes) {
      const built = resumed
        ? candidates.replay(state?.candidates, changes)
        : candidates.snapshot(state?.candidates, changes);
      report(built.rejections);
      commit(built.candidates, revision, "synced");
    },
    change(revision, change) {
      const changed = candidates.change(state?.candidates, change);
      report(changed.rejections);
      if (changed.candidates !== undefined) commit(changed.candidates, revision, "change");
      else resumePoint = revision;
    },
    advance(revision) {
      resumePoint = revision;
    },
    listed(revision, changes) {
      const built = candidates.snapshot(state?.candidates, changes);
      report(built.rejections);
      commit(built.candidates, revision, "poll");
    },
  };
}
