/**
 * The facts at the head of the Service view: where the projection comes
 * from (origin cluster), its version and the export time it encodes
 * (versions are RFC 3339 export times, `services/common/projection-version.ts`),
 * its signature (key id and algorithm from ProjectionSignature), and what
 * this registrar makes of the origin (GetConfigStatus `origins[]`: trusted,
 * how many of its projections are signed). Pure.
 */
import type { GetConfigStatusResponse } from "../../../../../gen/aether/registry/v1/config_service_pb.js";
import type { ServiceConfigProjection } from "../../../../../gen/aether/registry/v1/projection_pb.js";
import { algorithmName } from "../../../../../services/common/projection-signature.js";
import { parseVersion } from "../../../../../services/common/projection-version.js";

/** What this registrar says about the projection's origin. */
export type OriginTrust = "trusted" | "untrusted" | "unknown";

/** The header facts of one projection. */
export interface HeaderFacts {
  /** The origin cluster (`(none)` when empty). */
  readonly origin: string;
  /** The version as stored. */
  readonly version: string;
  /** The export time the version encodes (ms since the epoch); undefined when it is no RFC 3339 time. */
  readonly exportedAt: number | undefined;
  /** `signed by key K (ed25519)` or `unsigned`. */
  readonly signature: string;
  /** Whether it carries a signature. */
  readonly signed: boolean;
  /** Whether this registrar trusts the origin (`unknown` before GetConfigStatus answered or when it lists no such origin). */
  readonly trust: OriginTrust;
  /** `3 of 4 projections of origin hub signed (verified when --origin-keys lists it)`; empty when unknown. */
  readonly originSigning: string;
}

/** The export time a version encodes, in ms since the epoch; undefined for a malformed version. */
export function exportTime(version: string): number | undefined {
  const nanos = parseVersion(version);
  return nanos === undefined ? undefined : Number(nanos / 1_000_000n);
}

/** The header facts of `projection`, with `status` (GetConfigStatus) when it answered. */
export function headerFacts(
  projection: ServiceConfigProjection,
  status: GetConfigStatusResponse | undefined,
): HeaderFacts {
  const sig = projection.signature;
  const signed = sig !== undefined && sig.signature.length > 0;
  const origin = status?.origins.find((o) => o.origin === projection.originCluster);
  const trust: OriginTrust =
    origin === undefined ? "unknown" : origin.trusted ? "trusted" : "untrusted";
  const originSigning =
    origin === undefined
      ? ""
      : `${origin.signedProjections} of ${origin.projections} projections of ${origin.origin} signed`;
  return {
    origin: projection.originCluster || "(none)",
    version: projection.version,
    exportedAt: exportTime(projection.version),
    signature:
      sig === undefined || !signed
        ? "unsigned"
        : `signed by key ${sig.keyId || "(no id)"} (${algorithmName(sig.algorithm)})`,
    signed,
    trust,
    originSigning,
  };
}
