/**
 * The import policy: which origins' projections are trusted, and which one
 * wins when several trusted origins export the same service. Pure, no I/O.
 * The registrar's EFFECTIVE view and the agent use this one implementation,
 * so every importer picks the same winner.
 */
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import {
  bytesProblem,
  DEFAULT_PROJECTION_LIMITS,
  type ProjectionLimits,
} from "./projection-limits.js";
import { parseVersion } from "./projection-version.js";
import { checkRecordName } from "./service-name.js";
import type { SignatureCheck, SignatureRejectionReason } from "./signature-check.js";

/** Why a projection was not imported. */
export type ImportRejectionReason =
  /**
   * The projection is over the projection limits (see `projection-limits.ts`):
   * the policy checks a holder's encoded value against the byte limit before
   * anything else (see {@link PolicyCandidate.value}); the agent also checks
   * routes and rules of what it receives.
   */
  | "too_large"
  /** A control cluster is configured and the projection comes from another origin. */
  | "untrusted_origin"
  /** The projection's `version` is not an RFC 3339 timestamp. */
  | "invalid_version"
  /** The service key is neither `namespace/name` nor the mesh record's `@mesh`. */
  | "invalid_service"
  /** The projection's `service` field disagrees with the service it is stored under. */
  | "service_mismatch"
  /**
   * The projection's version lies further in the future than the importer
   * allows (see {@link ImportPolicyOptions.maxFutureMs}): a wrong clock at the
   * origin, or a forged value that would otherwise win every comparison.
   */
  | "version_out_of_range"
  /**
   * The projection is older than the newest version of its origin and
   * service this importer accepted (its high-water mark, see
   * `version-marks.ts`): a replayed old value. The newer one stays.
   */
  | "rollback"
  /**
   * Signatures (see `signature-check.ts`): `unsigned` when the importer
   * requires them and the projection has none, `unknown_key` when it is
   * signed with a key the origin's public keys do not list, `bad_signature`
   * when the signature does not hold.
   */
  | SignatureRejectionReason;

/** Every rejection reason, for metrics that pre-register their label values. */
export const IMPORT_REJECTION_REASONS: readonly ImportRejectionReason[] = [
  "too_large",
  "untrusted_origin",
  "invalid_version",
  "invalid_service",
  "service_mismatch",
  "version_out_of_range",
  "rollback",
  "unsigned",
  "unknown_key",
  "bad_signature",
];

/** The default of {@link ImportPolicyOptions.maxFutureMs}: five minutes. */
export const DEFAULT_MAX_FUTURE_MS = 5 * 60_000;

/** The fields of a projection the policy reads: its service and version. */
export type ProjectionHeader = Pick<ServiceConfigProjection, "service" | "version">;

/**
 * What the policy needs of a candidate: the origin and service of its key,
 * and the projection's own service and version. A holder of many candidates
 * (the registrar's cache) can offer just these instead of whole messages.
 */
export interface PolicyCandidate {
  /** The origin cluster, from the store key path. */
  readonly origin: string;
  /** The service, from the store key path. */
  readonly service: string;
  /** The projection, or at least its service and version. */
  readonly projection: ProjectionHeader;
  /**
   * The projection's binary encoding, when the holder keeps it (the
   * registrar's cache keeps nothing else): longer than the policy's
   * `limits.maxBytes`, the candidate is rejected as `too_large` from its
   * length alone, before any other check, so an oversized value is never
   * decoded to be judged.
   */
  readonly value?: Uint8Array;
}

/** A projection offered to the policy, with the origin and service of its key. */
export interface ImportCandidate extends PolicyCandidate {
  /** The projection itself. */
  readonly projection: ServiceConfigProjection;
}

/** A candidate the policy refused, and why. */
export interface ImportRejection<T extends PolicyCandidate> {
  /** The refused candidate. */
  readonly candidate: T;
  /** The machine-readable reason (a metric label). */
  readonly reason: ImportRejectionReason;
  /** A sentence for logs and `aetherctl status`. */
  readonly message: string;
}

/** A service that more than one trusted origin exports. */
export interface ImportConflict<T extends PolicyCandidate> {
  /** The service. */
  readonly service: string;
  /** The candidate that won. */
  readonly winner: T;
  /** The trusted candidates that lost, best first. */
  readonly losers: T[];
}

/** The outcome of {@link ImportPolicy.resolve}. */
export interface ImportResolution<T extends PolicyCandidate> {
  /** One winner per service, in service order. */
  readonly winners: Map<string, T>;
  /** Every refused candidate, in input order. */
  readonly rejections: ImportRejection<T>[];
  /** Every service with more than one trusted candidate, in service order. */
  readonly conflicts: ImportConflict<T>[];
}

/** Options of {@link createImportPolicy}. */
export interface ImportPolicyOptions {
  /**
   * The control cluster. When set (non-empty), only its projections are
   * trusted; when empty or undefined the topology is federated and every
   * origin is trusted.
   */
  readonly controlCluster?: string;
  /**
   * How far ahead of `now` a version may be, in milliseconds; a later one is
   * rejected as `version_out_of_range`. Default {@link DEFAULT_MAX_FUTURE_MS}.
   */
  readonly maxFutureMs?: number;
  /** The importer's clock, in milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
  /** The projection limits; default `DEFAULT_PROJECTION_LIMITS`. */
  readonly limits?: ProjectionLimits;
  /**
   * The signature check (see `signature-check.ts`); without one, signatures
   * are not looked at. It judges a candidate's `value` when it has one (the
   * stored bytes), else its decoded `projection`, which must then be a whole
   * message; a verdict is remembered per value object until the keys change
   * (see `SignatureCheck.judgeValue`).
   */
  readonly signatures?: SignatureCheck;
}

/** A configured import policy. */
export interface ImportPolicy {
  /** The control cluster, or undefined in federated mode. */
  readonly controlCluster: string | undefined;
  /** The projection limits the policy (and the agent's checks of what it receives) apply. */
  readonly limits: ProjectionLimits;
  /** Returns the rejection of one candidate, or undefined when it is acceptable. */
  check<T extends PolicyCandidate>(candidate: T): ImportRejection<T> | undefined;
  /**
   * Checks every candidate and picks one winner per service: the highest
   * `version` (compared as instants); equal versions are broken by the
   * lexicographically smallest origin name, so the outcome does not depend on
   * input order.
   */
  resolve<T extends PolicyCandidate>(candidates: Iterable<T>): ImportResolution<T>;
  /**
   * The winner per service among candidates that already passed
   * {@link ImportPolicy.check} when they arrived, without checking them
   * again: what an importer accepted stays accepted until its origin
   * replaces it. Everything `check` looks at is fixed for a value except the
   * origin keys, so this is exactly "a key removed from `--origin-keys`
   * revokes nothing already held" (a restart re-checks what it restores).
   */
  winners<T extends PolicyCandidate>(admitted: Iterable<T>): Map<string, T>;
  /**
   * Orders two acceptable candidates of one service: negative when `a` beats
   * `b`. Both must have passed {@link ImportPolicy.check}.
   */
  compare(a: PolicyCandidate, b: PolicyCandidate): number;
  /**
   * Ranks the acceptable candidates of one service, best first: the first is
   * the winner (see {@link ImportPolicy.resolve}), the rest lose in that
   * order. Every candidate must have passed {@link ImportPolicy.check} and
   * come from a distinct origin; the order does not depend on input order.
   * Returns a new array (empty for no candidates). This is where "who wins"
   * is decided: `resolve` and the registrar's cache both rank through it.
   */
  rank<T extends PolicyCandidate>(candidates: Iterable<T>): T[];
}

/** Creates the import policy for a topology. */
export function createImportPolicy(options: ImportPolicyOptions = {}): ImportPolicy {
  const controlCluster =
    options.controlCluster === undefined || options.controlCluster === ""
      ? undefined
      : options.controlCluster;
  const maxFutureMs = options.maxFutureMs ?? DEFAULT_MAX_FUTURE_MS;
  const now = options.now ?? Date.now;
  const limits = options.limits ?? DEFAULT_PROJECTION_LIMITS;
  const signatures = options.signatures;

  function check<T extends PolicyCandidate>(candidate: T): ImportRejection<T> | undefined {
    const bytes = candidate.value?.length;
    if (bytes !== undefined && bytes > limits.maxBytes) {
      return {
        candidate,
        reason: "too_large",
        message: `${bytesProblem(candidate.service, bytes, limits)} (from ${candidate.origin}; not decoded)`,
      };
    }
    if (controlCluster !== undefined && candidate.origin !== controlCluster) {
      return {
        candidate,
        reason: "untrusted_origin",
        message: `projection of ${candidate.service} from origin ${JSON.stringify(candidate.origin)} rejected: only the control cluster ${JSON.stringify(controlCluster)} is trusted`,
      };
    }
    const invalidService = checkRecordName(candidate.service);
    if (invalidService !== undefined) {
      return { candidate, reason: "invalid_service", message: invalidService };
    }
    if (candidate.projection.service !== candidate.service) {
      return {
        candidate,
        reason: "service_mismatch",
        message: `projection stored as ${candidate.service} names service ${JSON.stringify(candidate.projection.service)}`,
      };
    }
    if (signatures !== undefined) {
      // Judged once per value object and keys: re-resolving a held state verifies nothing again.
      const verdict = signatures.judgeValue(
        candidate.origin,
        candidate.service,
        candidate.value ?? (candidate.projection as ServiceConfigProjection),
      );
      if (verdict.kind === "rejected") {
        return { candidate, reason: verdict.reason, message: verdict.message };
      }
    }
    const version = parseVersion(candidate.projection.version);
    if (version === undefined) {
      return {
        candidate,
        reason: "invalid_version",
        message: `projection of ${candidate.service} from ${candidate.origin} has version ${JSON.stringify(candidate.projection.version)}, not an RFC 3339 timestamp`,
      };
    }
    const aheadMs = Number(version / 1_000_000n) - now();
    if (aheadMs > maxFutureMs) {
      return {
        candidate,
        reason: "version_out_of_range",
        message: `projection of ${candidate.service} from ${candidate.origin} has version ${candidate.projection.version}, ${Math.round(aheadMs / 1000)} s ahead of this importer's clock (at most ${Math.round(maxFutureMs / 1000)} s are allowed): the origin's clock is wrong, or the value was not written by it`,
      };
    }
    return undefined;
  }

  function compare(a: PolicyCandidate, b: PolicyCandidate): number {
    const va = parseVersion(a.projection.version) ?? -1n;
    const vb = parseVersion(b.projection.version) ?? -1n;
    if (va !== vb) return va > vb ? -1 : 1;
    return a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : 0;
  }

  function rank<T extends PolicyCandidate>(candidates: Iterable<T>): T[] {
    return [...candidates].sort(compare);
  }

  /** Ranks each service's `accepted` candidates: the winners and the conflicts. */
  function rankServices<T extends PolicyCandidate>(accepted: Iterable<T>) {
    const byService = new Map<string, T[]>();
    for (const candidate of accepted) {
      const list = byService.get(candidate.service);
      if (list === undefined) byService.set(candidate.service, [candidate]);
      else list.push(candidate);
    }
    const winners = new Map<string, T>();
    const conflicts: ImportConflict<T>[] = [];
    for (const service of [...byService.keys()].sort()) {
      const [winner, ...losers] = rank(byService.get(service) as T[]) as [T, ...T[]];
      winners.set(service, winner);
      if (losers.length > 0) conflicts.push({ service, winner, losers });
    }
    return { winners, conflicts };
  }

  function resolve<T extends PolicyCandidate>(candidates: Iterable<T>): ImportResolution<T> {
    const rejections: ImportRejection<T>[] = [];
    const accepted: T[] = [];
    for (const candidate of candidates) {
      const rejection = check(candidate);
      if (rejection === undefined) accepted.push(candidate);
      else rejections.push(rejection);
    }
    return { ...rankServices(accepted), rejections };
  }

  const winners = <T extends PolicyCandidate>(admitted: Iterable<T>) =>
    rankServices(admitted).winners;

  return { controlCluster, limits, check, resolve, winners, compare, rank };
}
