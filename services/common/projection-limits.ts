/**
 * How large one service's projection may be: its encoded bytes, its routes,
 * and its rules in all. Every stage holds projections to the same limits,
 * so that one oversized value (a 1.3 MB projection once took an agent from
 * 88 to 245 MB) cannot reach the agents: the exporter leaves out routes that
 * do not fit, the registrar's cache refuses a stored value over the byte
 * limit from its length alone (never decoding it), and the agent refuses a
 * received projection over any limit. All of them report `too_large`.
 *
 * The defaults are far above real config (a service with a few dozen routes
 * of a few rules each encodes to a few KiB) and far below what costs memory
 * to hold and send to every agent. Pure.
 */
import { toBinary } from "@bufbuild/protobuf";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";

/** The limits on one projection. */
export interface ProjectionLimits {
  /** The most bytes its binary encoding (as stored, origin and version stamped) may take. */
  readonly maxBytes: number;
  /** The most routes it may hold. */
  readonly maxRoutes: number;
  /** The most rules its routes may hold together. */
  readonly maxRules: number;
}

/** The limits every stage applies unless told otherwise: 256 KiB, 256 routes, 1024 rules. */
export const DEFAULT_PROJECTION_LIMITS: ProjectionLimits = Object.freeze({
  maxBytes: 256 * 1024,
  maxRoutes: 256,
  maxRules: 1024,
});

/**
 * The bytes the exporter keeps free of a projection's `maxBytes` for the
 * fields stamped after projection (`origin_cluster`, at most a 63-character
 * cluster name, and `version`, a 30-character timestamp, with their tags and
 * lengths): content within `maxBytes - STAMP_ALLOWANCE` stays within
 * `maxBytes` once stamped.
 */
export const STAMP_ALLOWANCE = 128;

/**
 * `DEFAULT_PROJECTION_LIMITS` with `overrides` applied. Throws a RangeError
 * when a limit is not a positive integer or `maxBytes` does not exceed
 * {@link STAMP_ALLOWANCE}.
 */
export function projectionLimits(overrides: Partial<ProjectionLimits> = {}): ProjectionLimits {
  const limits = { ...DEFAULT_PROJECTION_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new RangeError(`projection limit ${name} must be a positive integer, got ${value}`);
    }
  }
  if (limits.maxBytes <= STAMP_ALLOWANCE) {
    throw new RangeError(`projection limit maxBytes must exceed ${STAMP_ALLOWANCE}`);
  }
  return Object.freeze(limits);
}

/** How many rules the routes of `projection` hold together. */
export function countRules(projection: Pick<ServiceConfigProjection, "routes">): number {
  let rules = 0;
  for (const route of projection.routes) rules += route.rules.length;
  return rules;
}

/**
 * An upper bound on the binary encoding of a protobuf message (or any part
 * of one), found by walking it without encoding: every field counted at its
 * largest tag and length prefix, every string at three bytes a UTF-16 code
 * unit, every number as a ten-byte varint. About six times a typical
 * route's real size and some twenty times cheaper to work out than
 * encoding, so a projection far within its limit is never encoded to check.
 */
export function encodedSizeBound(message: unknown): number {
  let total = 0;
  const stack: unknown[] = [message];
  while (stack.length > 0) {
    const value = stack.pop();
    switch (typeof value) {
      case "string":
        total += 10 + 3 * value.length;
        break;
      case "number":
      case "bigint":
        total += 15;
        break;
      case "boolean":
        total += 6;
        break;
      case "object":
        if (value === null) break;
        total += 10;
        if (value instanceof Uint8Array) total += value.length;
        else if (Array.isArray(value)) for (const item of value) stack.push(item);
        else {
          // A map entry (its own tag, length and key field), or a oneof's `case`.
          const keyed = !("$typeName" in value);
          for (const key of Object.keys(value)) {
            if (key.charCodeAt(0) === 36) continue; // "$": $typeName, not encoded
            if (keyed) total += 20 + 3 * key.length;
            stack.push((value as Record<string, unknown>)[key]);
          }
        }
        break;
      default:
        break;
    }
  }
  return total;
}

/**
 * Why `projection` is over `limits`, as a sentence, or undefined when it is
 * within them: more routes or rules than allowed, or an encoding longer
 * than `maxBytes` (encoded only when {@link encodedSizeBound} cannot rule
 * that out).
 */
export function projectionSizeProblem(
  projection: ServiceConfigProjection,
  limits: ProjectionLimits,
): string | undefined {
  const { service } = projection;
  if (projection.routes.length > limits.maxRoutes) {
    return `the projection of ${service} holds ${projection.routes.length} routes; at most ${limits.maxRoutes} are allowed`;
  }
  const rules = countRules(projection);
  if (rules > limits.maxRules) {
    return `the projection of ${service} holds ${rules} rules; at most ${limits.maxRules} are allowed`;
  }
  if (encodedSizeBound(projection) <= limits.maxBytes) return undefined;
  const bytes = toBinary(ServiceConfigProjectionSchema, projection).length;
  return bytes > limits.maxBytes ? bytesProblem(service, bytes, limits) : undefined;
}

/**
 * The sentence for a projection of `service` whose encoding takes `bytes`,
 * more than `limits.maxBytes`.
 */
export function bytesProblem(service: string, bytes: number, limits: ProjectionLimits): string {
  return `the projection of ${service} takes ${bytes} bytes; at most ${limits.maxBytes} are allowed`;
}
