/**
 * The layout of projection keys in the shared store:
 * `<prefix>/clusters/<origin>/config/<base64url(namespace/name)>`.
 *
 * base64url without padding makes any `namespace/name` a single safe path
 * segment. The origin segment is what readers trust: a projection's origin is
 * always taken from its key, never from its value.
 */

import { allOriginsKeyPrefix, originSubtreePrefix } from "../../common/store-layout.js";

export {
  allOriginsKeyPrefix,
  DEFAULT_STORE_PREFIX,
  normalizePrefix,
} from "../../common/store-layout.js";

/** The parts a projection key encodes. */
export interface ProjectionKeyParts {
  /** The origin cluster that owns the key. */
  readonly origin: string;
  /** The service, as `namespace/name`. */
  readonly service: string;
}

/** Returns the key prefix under which one origin's projections live. */
export function originKeyPrefix(prefix: string, origin: string): string {
  return `${originSubtreePrefix(prefix, origin)}config/`;
}

/** Encodes a service name as one base64url path segment, without padding. */
export function encodeServiceSegment(service: string): string {
  return Buffer.from(service, "utf8").toString("base64url");
}

/** Returns the store key of one origin's projection of one service. */
export function projectionKey(prefix: string, origin: string, service: string): string {
  return originKeyPrefix(prefix, origin) + encodeServiceSegment(service);
}

const SEGMENT = /^[A-Za-z0-9_-]+$/;

/**
 * Parses a store key back into its origin and service. Returns undefined for a
 * key that is not a projection key under `prefix` (wrong prefix, wrong shape,
 * or a service segment that is not canonical base64url), so callers can skip
 * and count it instead of trusting it.
 */
export function parseProjectionKey(prefix: string, key: string): ProjectionKeyParts | undefined {
  const base = allOriginsKeyPrefix(prefix);
  if (!key.startsWith(base)) return undefined;
  const parts = key.slice(base.length).split("/");
  if (parts.length !== 3 || parts[1] !== "config") return undefined;
  const [origin, , segment] = parts as [string, string, string];
  if (origin === "" || !SEGMENT.test(segment)) return undefined;
  const service = Buffer.from(segment, "base64url").toString("utf8");
  if (encodeServiceSegment(service) !== segment) return undefined;
  return { origin, service };
}
