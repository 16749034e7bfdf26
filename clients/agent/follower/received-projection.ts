/**
 * The agent's check of every projection it receives (from a stream, a poll
 * or its own cache) before it may be applied: the service must be one the
 * agent asked for, the event must be well formed, the projection must be
 * within the projection limits (bytes, routes, rules: the policy's
 * `limits`), and the shared import policy (trust and validity, the same code
 * the registrar runs) must accept it. Pure, no I/O.
 */
import { create } from "@bufbuild/protobuf";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../../gen/aether/registry/v1/projection_pb.js";
import {
  IMPORT_REJECTION_REASONS,
  type ImportCandidate,
  type ImportPolicy,
  type ImportRejectionReason,
} from "../../../services/common/import-policy.js";
import { projectionSizeProblem } from "../../../services/common/projection-limits.js";

/**
 * Why the agent refused a projection: an import-policy reason, or
 * `not_requested` (a service outside the dependency set) or
 * `malformed_event` (no projection, no origin, or an origin that disagrees
 * with the event's).
 */
export type AgentRejectionReason = ImportRejectionReason | "not_requested" | "malformed_event";

/** Every agent rejection reason, for metrics that pre-register their label values. */
export const AGENT_REJECTION_REASONS: readonly AgentRejectionReason[] = [
  ...IMPORT_REJECTION_REASONS,
  "not_requested",
  "malformed_event",
];

/** A received projection, with the origin and service its event names. */
export interface ReceivedProjection {
  /** The origin the event (or, for a listing, the projection) names. */
  readonly origin: string;
  /** The service the event (or, for a listing, the projection) names. */
  readonly service: string;
  /** The projection, undefined when the event carried none. */
  readonly projection: ServiceConfigProjection | undefined;
}

/** A received projection the agent refused. */
export interface ReceivedRejection {
  /** The origin it named. */
  readonly origin: string;
  /** The service it named. */
  readonly service: string;
  /** Its version (empty when there was no projection). */
  readonly version: string;
  /** The machine-readable reason (a metric label). */
  readonly reason: AgentRejectionReason;
  /** A sentence for the log. */
  readonly message: string;
}

/** The outcome of {@link checkReceived}: an acceptable candidate, or a rejection. */
export type ReceivedCheck =
  | { readonly candidate: ImportCandidate; readonly rejection?: undefined }
  | { readonly candidate?: undefined; readonly rejection: ReceivedRejection };

/** The key of one origin's projection of one service in the agent's state. */
export function candidateKey(origin: string, service: string): string {
  return `${origin}\u0000${service}`;
}

/**
 * Checks a received projection against the requested service set, the
 * projection limits (`too_large`, before the policy's own checks) and the
 * import policy. The accepted candidate's projection has `originCluster`
 * stamped with the event's origin (a copy; the input is not changed).
 */
export function checkReceived(
  received: ReceivedProjection,
  requested: ReadonlySet<string>,
  policy: ImportPolicy,
): ReceivedCheck {
  const { origin, service, projection } = received;
  if (!requested.has(service)) {
    return rejected(
      received,
      "not_requested",
      `received ${JSON.stringify(service)}, which is not in the dependency set the agent asked for`,
    );
  }
  if (projection === undefined) {
    return rejected(received, "malformed_event", `the event for ${service} carries no projection`);
  }
  if (origin === "") {
    return rejected(
      received,
      "malformed_event",
      `the projection of ${service} names no origin cluster`,
    );
  }
  if (projection.originCluster !== "" && projection.originCluster !== origin) {
    return rejected(
      received,
      "malformed_event",
      `the event names origin ${JSON.stringify(origin)} but its projection of ${service} claims ${JSON.stringify(projection.originCluster)}`,
    );
  }
  const stamped =
    projection.originCluster === origin
      ? projection
      : create(ServiceConfigProjectionSchema, { ...projection, originCluster: origin });
  const tooLarge = projectionSizeProblem(stamped, policy.limits);
  if (tooLarge !== undefined)
    return rejected(received, "too_large", `${tooLarge} (from ${origin})`);
  const candidate: ImportCandidate = { origin, service, projection: stamped };
  const rejection = policy.check(candidate);
  if (rejection !== undefined) return rejected(received, rejection.reason, rejection.message);
  return { candidate };
}

/** The rejection of `received` (no closure per check: this runs for every received change). */
function rejected(
  received: ReceivedProjection,
  reason: AgentRejectionReason,
  message: string,
): ReceivedCheck {
  const { origin, service, projection } = received;
  return {
    rejection: { origin, service, version: projection?.version ?? "", reason, message },
  };
}
