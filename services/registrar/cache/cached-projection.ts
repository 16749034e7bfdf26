/**
 * What the registrar's config cache keeps of one stored projection: just what
 * the import policy reads, and the bytes as the store holds them. Never the
 * decoded message, which costs many times its encoding.
 */
import { fromBinary } from "@bufbuild/protobuf";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../../gen/aether/registry/v1/projection_pb.js";
import type { ProjectionHeader } from "../../common/import-policy.js";
import type { StoredProjection } from "../store/config-store.js";

/**
 * What the cache keeps of one stored projection: the origin and service of its
 * key, its revision, the projection's service and version (all the import
 * policy reads) and its binary encoding. The message itself is not kept
 * (decoded, it takes some fifteen times the memory of its encoding): a
 * consumer that needs it decodes `value` ({@link decodeCachedProjection}), and
 * one that sends protobuf binary sends `value` as it is.
 */
export interface CachedProjection {
  /** The origin cluster, from the key path. */
  readonly origin: string;
  /** The service (`namespace/name`), from the key path. */
  readonly service: string;
  /** The projection's service (equal to `service`) and version. */
  readonly projection: ProjectionHeader;
  /** The projection's binary encoding, `originCluster` stamped from the key. */
  readonly value: Uint8Array;
  /** The store revision at which the value was last written. */
  readonly modRevision: number;
}

/** Decodes the projection a cache entry holds (its value decoded when the store read it). */
export function decodeCachedProjection(entry: CachedProjection): ServiceConfigProjection {
  return fromBinary(ServiceConfigProjectionSchema, entry.value);
}

/**
 * What the cache keeps of a stored projection (see {@link CachedProjection}):
 * its version is read from `entry.version`, so the message is not decoded,
 * and `value` is shared, not copied.
 */
export function toCachedProjection(entry: StoredProjection): CachedProjection {
  return {
    origin: entry.origin,
    service: entry.service,
    projection: { service: entry.service, version: entry.version },
    value: entry.value,
    modRevision: entry.modRevision,
  };
}

/** Orders entries by service, then origin (plain string order): every listing's order. */
export function byServiceThenOrigin(a: CachedProjection, b: CachedProjection): number {
  if (a.service !== b.service) return a.service < b.service ? -1 : 1;
  return a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : 0;
}
