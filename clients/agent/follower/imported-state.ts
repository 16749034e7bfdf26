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
 *
 * Rollbacks are refused by the candidate set against its high-water marks,
 * which start from the initial state's marks and candidates (a restarted
 * agent's cache) and are carried in each new state, for the cache to keep.
 *
 * No silent loss: each new state's applied deletes are logged
 * and reported through `onLoss` ({@link LossReport}); a complete state that
 * lacks too many of the held candidates at once keeps them, held
 * (`vanish-guard.ts`), until the registrar has them again, deletes them
 * explicitly, or still lacks them once the hold ran out (checked on every
 * event from the registrar, keep-alives included: only the registrar's
 * word ends a hold, never the silence of an outage).
 */
import { DEFAULT_MASS_DELETE_THRESHOLD } from "../../../services/common/import-loss.js";
import type { ImportCandidate, ImportPolicy } from "../../../services/common/import-policy.js";
import type { VersionMark } from "../../../services/common/version-marks.js";
import type { Logger } from "../../../services/runtime/logger.js";
import { createRateLimitedLog } from "../../../services/runtime/rate-limited-log.js";
import { appliedLoss } from "./applied-loss.js";
import { createCandidateSet, freshCandidates, type ReceivedChange } from "./candidate-set.js";
import { isEmptyReport, type LossReport, logLoss } from "./loss-report.js";
import { candidateKey, type ReceivedRejection } from "./received-projection.js";
import {
  expiredHolds,
  type GuardedState,
  guardCompleteState,
  type HeldCandidate,
  type VanishGuardOptions,
} from "./vanish-guard.js";

/** The default hold of candidates a complete state lacked: 10 minutes. */
export const DEFAULT_MASS_DELETE_HOLD_MS = 10 * 60_000;

/** The imported state: complete for a dependency set, at a registrar revision. */
export interface FollowerState {
  /** The dependency set the state is complete for, sorted. */
  readonly services: readonly string[];
  /** The registrar store revision the state is consistent with. */
  readonly revision: bigint;
  /** Every accepted origin's projection, keyed by {@link candidateKey}. */
  readonly candidates: ReadonlyMap<string, ImportCandidate>;
  /**
   * The high-water marks: the newest version accepted of each origin's
   * service, also of those deleted since (see `version-marks.ts`). A state
   * without them (an old cache) implies its candidates' versions.
   */
  readonly marks?: readonly VersionMark[];
}

/** A new state, and how it came. */
export interface FollowerUpdate {
  /** The new state. */
  readonly state: FollowerState;
  /**
   * A stream snapshot or resume (`synced`), a streamed change (`change`), a
   * poll (`poll`), or held candidates dropped once their hold ran out (`expiry`).
   */
  readonly via: "synced" | "change" | "poll" | "expiry";
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
  /** The mass-disappearance guard; default more than 50% and at least 3, held for 10 minutes. */
  readonly guard?: VanishGuardOptions;
  /** The clock, in milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
  /** Called with what each new state deleted, rolled back, held or released (when anything). */
  onLoss?(report: LossReport): void;
}

/** The held state and the ways it changes; see the module comment. */
export interface ImportedState {
  /** The current state; undefined until an initial or a first complete state. */
  readonly state: FollowerState | undefined;
  /** The state's revision, advanced by later events and keep-alives. */
  readonly resumePoint: bigint;
  /** The dependency set, normalized; new states are complete for it. */
  readonly services: readonly string[];
  /** The candidates held although the registrar's state lacks them, by candidate key. */
  readonly held: ReadonlyMap<string, HeldCandidate>;
  /**
   * True from {@link ImportedState.wantSnapshot} until a complete state that
   * is not a resumed stream's (a snapshot, a listing) is applied: the next
   * stream must start from a fresh snapshot, not resume.
   */
  readonly snapshotWanted: boolean;
  /** Asks for a fresh snapshot of the dependency set (see {@link ImportedState.snapshotWanted}). */
  wantSnapshot(): void;
  /** Replaces the dependency set (normalized); the current state stays until the next one. */
  setServices(services: readonly string[]): void;
  /** A SYNCED: `changes` replace the state (or, `resumed`, are applied to it) at `revision`. */
  synced(resumed: boolean, revision: bigint, changes: readonly ReceivedChange[]): void;
  /** A streamed change at `revision`: a new state when it changes the candidates. */
  change(revision: bigint, change: ReceivedChange): void;
  /** Advances the resume point to `revision` (a keep-alive); holds that ran out are dropped. */
  advance(revision: bigint): void;
  /**
   * The registrar confirmed the state is still current (a keep-alive on a
   * live stream at a revision already applied): holds that ran out are dropped.
   */
  confirmed(): void;
  /** A complete listing at `revision`: its changes replace the state. */
  listed(revision: bigint, changes: readonly ReceivedChange[]): void;
}

/** What a commit carries besides the state: the guard's decisions. */
type HoldNews = Pick<GuardedState, "newlyHeld" | "back" | "expired">;

const NO_NEWS: HoldNews = { newlyHeld: [], back: [], expired: [] };

/** The versions a restored state has seen: its marks and every candidate it holds. */
function initialMarks(initial: ImportedState["state"]): VersionMark[] {
  const marks: VersionMark[] = [...(initial?.marks ?? [])];
  for (const c of initial?.candidates.values() ?? []) {
    marks.push({ origin: c.origin, service: c.service, version: c.projection.version });
  }
  return marks;
}

/** Creates the held state. */
export function createImportedState(options: ImportedStateOptions): ImportedState {
  const { logger } = options;
  const guard = options.guard ?? {
    threshold: DEFAULT_MASS_DELETE_THRESHOLD,
    holdMs: DEFAULT_MASS_DELETE_HOLD_MS,
  };
  const now = options.now ?? Date.now;
  let services = options.services;
  const candidates = createCandidateSet({
    policy: options.policy,
    services,
    marks: initialMarks(options.initial),
  });
  const rejectionLog = createRateLimitedLog(logger);
  let state = options.initial;
  let resumePoint = state?.revision ?? 0n;
  let held = new Map<string, HeldCandidate>();
  let snapshotWanted = false;

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
    news: HoldNews,
  ) => {
    const previous = state?.candidates;
    const loss: LossReport = {
      via,
      revision,
      ...appliedLoss(previous, next, candidates.requested),
      ...news,
    };
    if (!isEmptyReport(loss)) {
      logLoss(logger, loss, held.size);
      options.onLoss?.(loss);
    }
    const fresh = freshCandidates(previous, next);
    resumePoint = revision;
    state = { services, revision, candidates: next, marks: candidates.marks() };
    options.onUpdate?.({ state, via, fresh, first: previous === undefined });
  };

  /** A complete state: guarded, then committed. */
  const complete = (
    next: Map<string, ImportCandidate>,
    revision: bigint,
    via: "synced" | "poll",
  ) => {
    const guarded = guardCompleteState(
      { previous: state?.candidates, next, requested: candidates.requested, held, now: now() },
      guard,
    );
    held = guarded.held;
    commit(guarded.candidates, revision, via, guarded);
  };

  /**
   * `base` without the holds that ran out (the registrar, which just spoke,
   * still lacks them), and those holds; `base` itself when none ran out.
   */
  const dropExpired = (base: ReadonlyMap<string, ImportCandidate>) => {
    const keys = expiredHolds(held, now(), guard.holdMs);
    if (keys.length === 0) return undefined;
    const next = new Map(base);
    const expired = keys.map((key) => {
      next.delete(key);
      const hold = held.get(key) as HeldCandidate;
      held.delete(key);
      return hold;
    });
    return { next, expired };
  };

  /** Commits the state without the holds that ran out, if any, at the resume point. */
  const dropExpiredNow = () => {
    const dropped = state === undefined ? undefined : dropExpired(state.candidates);
    if (dropped !== undefined) {
      commit(dropped.next, resumePoint, "expiry", { ...NO_NEWS, expired: dropped.expired });
    }
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
    get held() {
      return held;
    },
    get snapshotWanted() {
      return snapshotWanted;
    },
    wantSnapshot() {
      snapshotWanted = true;
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
      if (!resumed) snapshotWanted = false;
      complete(built.candidates, revision, "synced");
    },
    change(revision, change) {
      const changed = candidates.change(state?.candidates, change);
      report(changed.rejections);
      const back: ImportCandidate[] = [];
      const key = candidateKey(change.origin, change.service);
      if (changed.candidates !== undefined && held.delete(key)) {
        // Upserted (back) or deleted by the registrar itself: no longer held.
        const again = changed.candidates.get(key);
        if (again !== undefined) back.push(again);
      }
      const base = changed.candidates ?? state?.candidates;
      const dropped = base === undefined ? undefined : dropExpired(base);
      if (changed.candidates === undefined && dropped === undefined) {
        resumePoint = revision;
        return;
      }
      const next = dropped?.next ?? (changed.candidates as Map<string, ImportCandidate>);
      const via = changed.candidates === undefined ? "expiry" : "change";
      commit(next, revision, via, { newlyHeld: [], back, expired: dropped?.expired ?? [] });
    },
    advance(revision) {
      resumePoint = revision;
      dropExpiredNow();
    },
    confirmed: () => dropExpiredNow(),
    listed(revision, changes) {
      const built = candidates.snapshot(state?.candidates, changes);
      report(built.rejections);
      snapshotWanted = false;
      complete(built.candidates, revision, "poll");
    },
  };
}
