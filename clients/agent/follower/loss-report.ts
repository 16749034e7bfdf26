/**
 * How the imported state reports what a new state took away or kept back:
 * one report per new state ({@link LossReport}), and its log lines, one per
 * kind and state (not one per projection): applied deletes at info; new
 * holds and expired holds at warn; releases at info.
 */
import type { ImportCandidate } from "../../../services/common/import-policy.js";
import type { Logger } from "../../../services/runtime/logger.js";
import type { HeldCandidate } from "./vanish-guard.js";

/** What one new state deleted, held and released. */
export interface LossReport {
  /** How the state came: a complete state, a streamed change, a poll, or a hold running out. */
  readonly via: "synced" | "change" | "poll" | "expiry";
  /** The registrar revision of the state. */
  readonly revision: bigint;
  /** The candidates it deleted (applied). */
  readonly deleted: readonly ImportCandidate[];
  /** The candidates it lacked that are kept and held instead. */
  readonly newlyHeld: readonly HeldCandidate[];
  /** The held candidates the registrar has again. */
  readonly back: readonly ImportCandidate[];
  /** The held candidates dropped because the hold ran out (also among `deleted`). */
  readonly expired: readonly HeldCandidate[];
}

/** Whether a report has anything to say. */
export function isEmptyReport(report: LossReport): boolean {
  return (
    report.deleted.length === 0 &&
    report.newlyHeld.length === 0 &&
    report.back.length === 0 &&
    report.expired.length === 0
  );
}

/** How many projections a line names; the rest are counted. */
const NAMED = 20;

const name = (candidate: ImportCandidate) => `${candidate.origin}/${candidate.service}`;

/** Logs `report` (see the module comment); nothing when it is empty. */
export function logLoss(logger: Logger, report: LossReport, heldNow: number): void {
  const base = { via: report.via, revision: String(report.revision) };
  const named = <T>(items: readonly T[], show: (item: T) => string) =>
    items.slice(0, NAMED).map(show);
  if (report.newlyHeld.length > 0) {
    logger.warn(
      {
        ...base,
        held: report.newlyHeld.length,
        heldTotal: heldNow,
        reason: report.newlyHeld[0]?.reason,
        projections: named(report.newlyHeld, (h) => name(h.candidate)),
      },
      "holding imported projections the registrar's state lacks: too many vanished at once; they stay in the route table",
    );
  }
  if (report.expired.length > 0) {
    logger.warn(
      {
        ...base,
        expired: report.expired.length,
        projections: named(report.expired, (h) => name(h.candidate)),
      },
      "hold ran out and the registrar still lacks them: dropping held projections",
    );
  }
  if (report.back.length > 0) {
    logger.info(
      {
        ...base,
        back: report.back.length,
        stillHeld: heldNow,
        projections: named(report.back, name),
      },
      "held projections are back from the registrar",
    );
  }
  if (report.deleted.length > 0) {
    logger.info(
      { ...base, deletes: report.deleted.length, projections: named(report.deleted, name) },
      "applied deletes of imported projections",
    );
  }
}
