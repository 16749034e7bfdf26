/**
 * The export plan: what the export controller writes, worked out from what
 * it wants to export and what it knows the store holds. Pure and
 * synchronous: no store, no clock (the caller passes the clock's reading),
 * no timers, so it is tested with tables.
 *
 * - The view: each stored service's content digest, version and seal (who
 *   signed it, see `export-seal.ts`), as listed
 *   once per term (see {@link storedView}) and kept up to date by the
 *   controller's own writes and the watch of its keys (`own-key-watch.ts`).
 * - The changes: the projections whose content (or seal) differs from the
 *   view, in write batches, their content encoded only as each batch is asked for
 *   (see {@link changedBatches}).
 * - The unexports: the services in the view that are no longer projected,
 *   held while the source reports problems (see {@link planUnexports}).
 * - The versions: export times that strictly increase per service and
 *   across calls (see {@link nextVersion}).
 */
import { createHash } from "node:crypto";
import type { ServiceConfigProjection } from "../../../gen/aether/registry/v1/projection_pb.js";
import { projectionContent } from "../../common/projection-content.js";
import { parseVersion } from "../../common/projection-version.js";
import { MAX_WRITE_BATCH, type StoredProjection } from "../store/config-store.js";
import { unstampValue } from "../store/decode-entry.js";
import type { SealOf } from "./export-seal.js";

/** What the controller knows it wrote (or listed) for one service under its origin. */
export interface ExportedProjection {
  /** The digest of the content bytes (see {@link contentDigest}). */
  readonly digest: string;
  /** The stored version. */
  readonly version: string;
  /** Who signed the stored value (see `export-seal.ts`); `""` unsigned. */
  readonly seal: string;
}

/** What the store holds under the controller's origin, by service (`namespace/name`). */
export type ExportView = Map<string, ExportedProjection>;

/**
 * The digest by which the controller recognises content it exported: the
 * SHA-256 of the content bytes (see {@link projectionContent}), base64url.
 * Equal bytes give equal digests.
 */
export function contentDigest(content: Uint8Array): string {
  return createHash("sha256").update(content).digest("base64url");
}

/**
 * Builds the view of stored projections: each entry's content digest,
 * version and seal (`sealOf` its stored bytes; default: unsigned), by service. The content is read off the stored bytes without
 * decoding them: they are encoded canonically (by the controller, or a
 * `--seed`), so dropping the origin and version fields gives exactly the
 * content bytes; bytes that do not parse fall back to the decoded
 * projection's content. (Bytes some other encoder wrote with another field
 * order would only look changed, and be written once more.)
 */
export function storedView(
  entries: Iterable<Pick<StoredProjection, "service" | "value" | "version" | "projection">>,
  sealOf: SealOf = () => "",
): ExportView {
  const view: ExportView = new Map();
  for (const entry of entries) {
    view.set(entry.service, {
      digest: storedDigest(entry),
      version: entry.version,
      seal: sealOf(entry.value),
    });
  }
  return view;
}

/**
 * The content digest of a stored entry, as {@link storedView} reads it: of
 * the stored bytes without origin, version and signature, or of the decoded
 * projection's content when the bytes do not parse.
 */
export function storedDigest(entry: Pick<StoredProjection, "value" | "projection">): string {
  return contentDigest(unstampValue(entry.value) ?? projectionContent(entry.projection));
}

/** A projection whose content (or seal) differs from what the view holds. */
export interface ChangedProjection {
  /** The projection, without version and origin. */
  readonly projection: ServiceConfigProjection;
  /** Its content bytes (see {@link projectionContent}). */
  readonly content: Uint8Array;
  /** Their digest (see {@link contentDigest}). */
  readonly digest: string;
  /** Whether the view holds no projection of the service yet. */
  readonly isNew: boolean;
  /**
   * The stored version when only the seal differs (same content: the value
   * is signed again under its version, see `wantedSeal`); undefined when the
   * content is new or changed (a new version is issued).
   */
  readonly resealVersion: string | undefined;
}

/** The most content bytes one write batch carries, well under etcd's 1.5 MiB request limit. */
export const MAX_BATCH_BYTES = 512 * 1024;

/** The bytes a batch counts for each projection besides its content (key, version, origin). */
export const BATCH_ENTRY_OVERHEAD = 128;

/** How large a write batch may grow; see {@link changedBatches}. */
export interface BatchLimits {
  /** The most projections in one batch; positive. */
  readonly maxCount: number;
  /** The most bytes (content plus {@link BATCH_ENTRY_OVERHEAD} each) in one batch. */
  readonly maxBytes: number;
}

/** The limits of the store's write batches: {@link MAX_WRITE_BATCH} and {@link MAX_BATCH_BYTES}. */
export const STORE_BATCH_LIMITS: BatchLimits = {
  maxCount: MAX_WRITE_BATCH,
  maxBytes: MAX_BATCH_BYTES,
};

/**
 * Yields the projections whose content differs from `view`, or whose stored
 * seal is not `seal` (the one wanted, `""` unsigned), in order, in
 * batches of at most `limits.maxCount` projections and about
 * `limits.maxBytes` bytes (a projection larger than that goes alone),
 * encoding each projection's content only when the batch is asked for.
 * Each projection is removed from `projections` (its slot set to undefined)
 * as it is taken, so that a large export holds only the projections not
 * written yet; undefined slots are skipped. `view` is read as each batch is
 * made, never written.
 */
export function* changedBatches(
  projections: (ServiceConfigProjection | undefined)[],
  view: ReadonlyMap<string, ExportedProjection>,
  limits: BatchLimits = STORE_BATCH_LIMITS,
  seal = "",
): Generator<ChangedProjection[]> {
  let batch: ChangedProjection[] = [];
  let bytes = 0;
  for (let i = 0; i < projections.length; i++) {
    const projection = projections[i];
    projections[i] = undefined;
    if (projection === undefined) continue;
    const known = view.get(projection.service);
    const content = projectionContent(projection);
    const digest = contentDigest(content);
    const sameContent = known?.digest === digest;
    if (sameContent && known?.seal === seal) continue;
    const size = content.length + BATCH_ENTRY_OVERHEAD;
    if (batch.length > 0 && (batch.length >= limits.maxCount || bytes + size > limits.maxBytes)) {
      yield batch;
      batch = [];
      bytes = 0;
    }
    const resealVersion = sameContent ? known?.version : undefined;
    batch.push({ projection, content, digest, isNew: known === undefined, resealVersion });
    bytes += size;
  }
  if (batch.length > 0) yield batch;
}

/** What {@link planUnexports} decided. */
export interface Unexports {
  /** The services to delete now, in the view's order. */
  readonly unexport: readonly string[];
  /** The services that would be deleted but are held, in the view's order. */
  readonly held: readonly string[];
}

/**
 * Decides which services in `view` to unexport: those no longer in
 * `projected`. While the source reports problems (`sourceHasProblems`: a
 * manifest that does not parse, a failed watch) its snapshot may be missing
 * objects that still exist, so they are all held instead, and a typo never
 * deletes config.
 */
export function planUnexports(
  view: ReadonlyMap<string, unknown>,
  projected: ReadonlySet<string>,
  sourceHasProblems: boolean,
): Unexports {
  const gone = [...view.keys()].filter((service) => !projected.has(service));
  return sourceHasProblems ? { unexport: [], held: gone } : { unexport: gone, held: [] };
}

/**
 * Returns the version to issue (nanoseconds since the Unix epoch; see
 * `formatVersion`) for new content of a service whose stored version is
 * `previous`, given the clock's reading `now` and the last version issued
 * for any service, `lastIssued` (0 before the first): `now`, raised above
 * `lastIssued` and above `previous` where needed. So versions strictly
 * increase across calls, even within one clock reading, and per service,
 * even when another writer's clock was ahead, within `maxFutureNanos` of
 * `now`. An unparsable `previous`, or one further ahead than that, is
 * ignored: the exporter never derives a version from a value it cannot
 * have written.
 */
export function nextVersion(
  previous: string | undefined,
  now: bigint,
  lastIssued: bigint,
  maxFutureNanos: bigint = DEFAULT_MAX_FUTURE_NANOS,
): bigint {
  let nanos = now;
  if (nanos <= lastIssued) nanos = lastIssued + 1n;
  const stored = previous === undefined ? undefined : parseVersion(previous);
  if (stored !== undefined && stored <= now + maxFutureNanos && nanos <= stored) {
    nanos = stored + 1n;
  }
  return nanos;
}

/**
 * How far ahead of the clock a stored version may be for {@link nextVersion}
 * to issue above it: the importers' default window (five minutes). A stored
 * version further ahead is no version this exporter issued (a forged value,
 * or a clock that was wildly wrong), and importers reject it as
 * `version_out_of_range` anyway: building on it would carry it forward.
 */
export const DEFAULT_MAX_FUTURE_NANOS = 5n * 60n * 1_000_000_000n;
