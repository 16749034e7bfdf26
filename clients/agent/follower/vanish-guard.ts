/**
 * The agent's guard against a mass disappearance in its own view: when a
 * complete state from the registrar (a SYNCED snapshot or replay, a poll
 * listing) lacks too many of the imported projections the agent holds, the
 * missing ones are kept (last-known stays) and recorded as held, instead of
 * being dropped at once. Too many: more than the threshold of one origin's
 * held projections, or of all of them, or every one (the registrar's state
 * has none of the dependency set any more, while the agent had some): an
 * agent must not go to zero services because a prefix was wiped.
 *
 * A held projection is released when the registrar has it again (a later
 * state, or a streamed upsert), when the registrar deletes it explicitly (a
 * streamed DELETE: the registrar's own hold was released), when its service
 * leaves the dependency set, or when the hold has lasted `holdMs` and the
 * registrar still lacks it (a later state or a keep-alive says so); only
 * then is it dropped, as a delete.
 *
 * Pure and timer-free: the clock is an argument; `imported-state.ts` keeps
 * the holds and applies what these functions decide.
 */
import {
  isMassDisappearance,
  type MassDeleteThreshold,
} from "../../../services/common/import-loss.js";
import type { ImportCandidate } from "../../../services/common/import-policy.js";

/** A candidate kept although the registrar's latest complete state lacks it. */
export interface HeldCandidate {
  /** The candidate, as the agent last had it. */
  readonly candidate: ImportCandidate;
  /** When the hold started, in milliseconds since the epoch. */
  readonly since: number;
  /** Why it is held, as a sentence. */
  readonly reason: string;
}

/** How the guard decides; see the module comment. */
export interface VanishGuardOptions {
  /** When candidates missing from a complete state are held. */
  readonly threshold: MassDeleteThreshold;
  /** How long a hold lasts before a state that still lacks the candidate drops it. */
  readonly holdMs: number;
}

/** A complete state received, and what the guard knows around it. */
export interface CompleteStateInput {
  /** The state the agent holds (held candidates included); undefined before the first. */
  readonly previous: ReadonlyMap<string, ImportCandidate> | undefined;
  /** The new state as the registrar sent it (not changed). */
  readonly next: ReadonlyMap<string, ImportCandidate>;
  /** The dependency set the new state is complete for. */
  readonly requested: ReadonlySet<string>;
  /** The holds in force, by candidate key. */
  readonly held: ReadonlyMap<string, HeldCandidate>;
  /** Now, in milliseconds since the epoch. */
  readonly now: number;
}

/** What {@link guardCompleteState} decides. */
export interface GuardedState {
  /** The state to commit: the new one, plus every held candidate. */
  readonly candidates: Map<string, ImportCandidate>;
  /** The holds in force after it, by candidate key. */
  readonly held: Map<string, HeldCandidate>;
  /** The candidates held by this state. */
  readonly newlyHeld: readonly HeldCandidate[];
  /** The held candidates this state has again (released). */
  readonly back: readonly ImportCandidate[];
  /** The held candidates dropped: the hold ran out and the registrar still lacks them. */
  readonly expired: readonly HeldCandidate[];
}

/** The keys of requested candidates of `previous` that `next` lacks and that are not held, by origin. */
function vanishedByOrigin(input: CompleteStateInput): {
  vanished: Map<string, string[]>;
  heldBefore: Map<string, number>;
} {
  const vanished = new Map<string, string[]>();
  const heldBefore = new Map<string, number>();
  for (const [key, candidate] of input.previous ?? []) {
    if (!input.requested.has(candidate.service)) continue;
    heldBefore.set(candidate.origin, (heldBefore.get(candidate.origin) ?? 0) + 1);
    if (input.next.has(key) || input.held.has(key)) continue;
    const keys = vanished.get(candidate.origin);
    if (keys === undefined) vanished.set(candidate.origin, [key]);
    else keys.push(key);
  }
  return { vanished, heldBefore };
}

/** How many candidates of `state` are for a requested service. */
function requestedCount(
  state: ReadonlyMap<string, ImportCandidate>,
  requested: ReadonlySet<string>,
): number {
  let count = 0;
  for (const candidate of state.values()) if (requested.has(candidate.service)) count++;
  return count;
}

/**
 * Decides what a complete state means for the holds (see the module
 * comment): which held candidates are back, which expired, which stay, and
 * which newly missing candidates are held.
 */
export function guardCompleteState(
  input: CompleteStateInput,
  options: VanishGuardOptions,
): GuardedState {
  const { next, requested, now } = input;
  const candidates = new Map(next);
  const held = new Map<string, HeldCandidate>();
  const back: ImportCandidate[] = [];
  const expired: HeldCandidate[] = [];
  for (const [key, hold] of input.held) {
    if (!requested.has(hold.candidate.service)) continue;
    const again = next.get(key);
    if (again !== undefined) back.push(again);
    else if (now - hold.since >= options.holdMs) expired.push(hold);
    else {
      held.set(key, hold);
      candidates.set(key, hold.candidate);
    }
  }
  const { vanished, heldBefore } = vanishedByOrigin(input);
  const vanishedTotal = [...vanished.values()].reduce((sum, keys) => sum + keys.length, 0);
  const total = [...heldBefore.values()].reduce((sum, count) => sum + count, 0);
  const emptied = vanishedTotal > 0 && requestedCount(next, requested) === 0;
  const whole = emptied || isMassDisappearance(total, vanishedTotal, options.threshold);
  const newlyHeld: HeldCandidate[] = [];
  for (const [origin, keys] of vanished) {
    const of = heldBefore.get(origin) ?? 0;
    if (!whole && !isMassDisappearance(of, keys.length, options.threshold)) continue;
    const reason = whole
      ? `${vanishedTotal} of the ${total} imported projections missing from one complete state${emptied ? " (none left)" : ""}`
      : `${keys.length} of origin ${origin}'s ${of} imported projections missing from one complete state`;
    for (const key of keys) {
      const candidate = input.previous?.get(key) as ImportCandidate;
      const hold = { candidate, since: now, reason };
      held.set(key, hold);
      candidates.set(key, candidate);
      newlyHeld.push(hold);
    }
  }
  return { candidates, held, newlyHeld, back, expired };
}

/**
 * The holds that have lasted `holdMs` at `now` and whose candidate the
 * current state still holds only because of the hold: to be dropped when
 * the registrar confirms it still lacks them (a keep-alive or a change).
 */
export function expiredHolds(
  held: ReadonlyMap<string, HeldCandidate>,
  now: number,
  holdMs: number,
): string[] {
  const keys: string[] = [];
  for (const [key, hold] of held) if (now - hold.since >= holdMs) keys.push(key);
  return keys;
}
