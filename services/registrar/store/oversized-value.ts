/**
 * A stored value over the projection byte limit, as a store passes it on:
 * never decoded (decoding a 15 MB value costs many times that in memory),
 * only its `version` read off its top-level field headers, and a stub in
 * place of its projection. The import policy then rejects it as `too_large`
 * from its length alone (see `PolicyCandidate.value`), and the cache serves
 * it to nobody.
 */
import { create } from "@bufbuild/protobuf";
import { ServiceConfigProjectionSchema } from "../../../gen/aether/registry/v1/projection_pb.js";
import { fieldSpans } from "../../common/wire-fields.js";
import type { StoredProjection } from "./config-store.js";
import type { ProjectionKeyParts } from "./store-key.js";

/** The longest `version` read off an oversized value; a longer one is read as empty. */
const MAX_PEEKED_VERSION = 64;

/**
 * The `version` (field 3) of an encoded projection, read by walking its
 * top-level fields without decoding them; undefined when the bytes are not
 * a well-formed sequence of fields before it, it is missing, or it is longer
 * than 64 bytes. Costs one step per top-level field (routes are skipped
 * whole).
 */
export function peekVersion(value: Uint8Array): string | undefined {
  for (const span of fieldSpans(value)) {
    if (span === undefined) return undefined;
    if (span.field !== 3 || span.wireType !== 2) continue;
    if (span.end - span.valueStart > MAX_PEEKED_VERSION) return undefined;
    return new TextDecoder().decode(value.subarray(span.valueStart, span.end));
  }
  return undefined;
}

/**
 * The entry a store gives for `value`, stored under the key of `parts` at
 * `modRevision`, when it is over the byte limit: `value` as stored (never
 * decoded, not verified against its key), the version {@link peekVersion}
 * reads (empty when it reads none), and as `projection` a stub with the
 * key's service and origin, that version, and no routes.
 */
export function oversizedEntry(
  parts: ProjectionKeyParts,
  value: Uint8Array,
  modRevision: number,
): StoredProjection {
  const version = peekVersion(value) ?? "";
  return {
    origin: parts.origin,
    service: parts.service,
    projection: create(ServiceConfigProjectionSchema, {
      service: parts.service,
      originCluster: parts.origin,
      version,
    }),
    value,
    version,
    modRevision,
  };
}
