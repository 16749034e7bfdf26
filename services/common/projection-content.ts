/**
 * A projection's content: what it routes, apart from where and when it was
 * exported. Two projections of a service with equal content bytes route the
 * same; the exporter bumps a version only when they differ, and the agent
 * names local routes by their digest. Pure.
 */
import { toBinary } from "@bufbuild/protobuf";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { sha256Hex } from "./sha256.js";

/**
 * Returns the bytes that define a projection's content: its protobuf binary
 * encoding with `version` and `originCluster` cleared and no `signature`
 * (a re-signed projection routes the same).
 */
export function projectionContent(projection: ServiceConfigProjection): Uint8Array {
  return toBinary(ServiceConfigProjectionSchema, {
    ...projection,
    version: "",
    originCluster: "",
    signature: undefined,
  });
}

/** Reports whether two projections have the same content (see {@link projectionContent}). */
export function sameContent(a: ServiceConfigProjection, b: ServiceConfigProjection): boolean {
  const x = projectionContent(a);
  const y = projectionContent(b);
  return x.length === y.length && x.every((byte, i) => byte === y[i]);
}

/**
 * The version recorded for a local (class-2) projection, which has no export
 * time: `sha256:` and the first 16 hex digits of its content's digest.
 */
export function localVersion(projection: ServiceConfigProjection): string {
  return `sha256:${sha256Hex(projectionContent(projection)).slice(0, 16)}`;
}
