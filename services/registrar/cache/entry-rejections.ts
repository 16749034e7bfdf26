/**
 * The projection index's rejections in force, by origin and service: the
 * import policy's rejection of each held entry that has one, and the puts
 * refused, which are never held: as `rollback` against the index's
 * high-water marks (see `version-marks.ts`), or for their signature
 * (`unsigned`, `unknown_key`, `bad_signature`: a forged value must not
 * replace the last good projection). Each new rejected value (a new
 * modification revision) is reported once. Synchronous, no I/O.
 */
import type {
  ImportPolicy,
  ImportRejection,
  ImportRejectionReason,
} from "../../common/import-policy.js";
import type { SignatureRejectionReason } from "../../common/signature-check.js";
import { createVersionMarks } from "../../common/version-marks.js";
import { byServiceThenOrigin, type CachedProjection } from "./cached-projection.js";

/** The rejection reasons of a put that is refused (not applied), besides `rollback`. */
const SIGNATURE_REASONS: ReadonlySet<ImportRejectionReason> = new Set<SignatureRejectionReason>([
  "unsigned",
  "unknown_key",
  "bad_signature",
]);

/** Whether `reason` is a signature's: the put is refused, and judged again when the keys change. */
export const isSignatureReason = (reason: ImportRejectionReason): boolean =>
  SIGNATURE_REASONS.has(reason);

/** The key of an origin's service in the index. */
export const entryKey = (origin: string, service: string) => `${origin}\u0000${service}`;

/** The rejections of one index; see the module comment. */
export interface EntryRejections {
  /**
   * Judges a put of `entry` before it is applied: false when it is a
   * rollback or its signature is rejected (refused: it must not be
   * applied; the refusal is in force until its key changes), true when it
   * may be applied (its policy rejection, if any, is then in force and its
   * mark raised when none).
   */
  admit(entry: CachedProjection): boolean;
  /** The entries refused for their signature, to judge again when the keys change. */
  refusedForSignature(): CachedProjection[];
  /** Forgets every rejection of `origin`'s `service` (it was deleted); its mark stays. */
  forget(origin: string, service: string): void;
  /** Whether the held entry of `key` is rejected by the policy (it never wins). */
  isRejected(key: string): boolean;
  /** Whether the held entry of `key` may be served: it is not rejected as `too_large`. */
  servable(key: string): boolean;
  /** Every rejection in force, by service then origin. */
  list(): ImportRejection<CachedProjection>[];
  /** How many rejections are in force, by reason. */
  counts(): Map<ImportRejectionReason, number>;
}

/** Creates the rejections of an index under `policy`, reporting new ones to `onRejection`. */
export function createEntryRejections(
  policy: ImportPolicy,
  onRejection: ((rejection: ImportRejection<CachedProjection>) => void) | undefined,
): EntryRejections {
  /** The policy's rejection of each rejected held entry. */
  const rejected = new Map<string, ImportRejection<CachedProjection>>();
  /** The puts refused as `rollback` (not applied), until the key changes. */
  const refused = new Map<string, ImportRejection<CachedProjection>>();
  /** The newest accepted version of each origin's service, for the index's lifetime. */
  const marks = createVersionMarks();

  /** Puts `rejection` in `map`; reports it when its value is new. */
  function remember(
    map: Map<string, ImportRejection<CachedProjection>>,
    key: string,
    rejection: ImportRejection<CachedProjection>,
  ): void {
    const previous = map.get(key);
    map.set(key, rejection);
    if (previous?.candidate.modRevision !== rejection.candidate.modRevision) {
      onRejection?.(rejection);
    }
  }

  return {
    admit(entry) {
      const key = entryKey(entry.origin, entry.service);
      const rejection = policy.check(entry);
      if (rejection === undefined) {
        const rollback = marks.check(entry);
        if (rollback !== undefined) {
          remember(refused, key, rollback);
          return false;
        }
        marks.accept(entry);
        rejected.delete(key);
      } else if (isSignatureReason(rejection.reason)) {
        remember(refused, key, rejection);
        return false;
      } else {
        remember(rejected, key, rejection);
      }
      refused.delete(key);
      return true;
    },
    refusedForSignature() {
      const entries: CachedProjection[] = [];
      for (const { reason, candidate } of refused.values()) {
        if (isSignatureReason(reason)) entries.push(candidate);
      }
      return entries;
    },
    forget(origin, service) {
      const key = entryKey(origin, service);
      rejected.delete(key);
      refused.delete(key);
    },
    isRejected: (key) => rejected.has(key),
    servable: (key) => rejected.get(key)?.reason !== "too_large",
    list() {
      return [...rejected.values(), ...refused.values()].sort((a, b) =>
        byServiceThenOrigin(a.candidate, b.candidate),
      );
    },
    counts() {
      const counts = new Map<ImportRejectionReason, number>();
      for (const rejection of [...rejected.values(), ...refused.values()]) {
        counts.set(rejection.reason, (counts.get(rejection.reason) ?? 0) + 1);
      }
      return counts;
    },
  };
}
