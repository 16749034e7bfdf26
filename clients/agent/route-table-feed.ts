/**
 * The agent's route table feed: the merge of local and imported config
 * ({@link mergeRouteTable}) kept as the current table, changed only when its
 * content changed, with its JSON made lazily; the readiness decision; and
 * the fingerprint of what the last-known cache holds. No I/O, no timers: the
 * agent publishes what the feed returns.
 *
 * A table's content is decided by each service's (and the mesh defaults')
 * source, origin, version and signer (a version names one content, and a local version is a content
 * digest; an origin that rotates its signing key re-signs under the same
 * version, and the table, the JSON and the cache must then carry the new
 * signature: the old key may be removed next, and a restored old-key
 * signature would be refused), so comparing those finds every change
 * without serializing the table; the JSON is made only when something
 * reads it (`--out`, `GET /routes`).
 */
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import type { ImportCandidate } from "../../services/common/import-policy.js";
import { localVersion } from "../../services/common/projection-content.js";
import {
  mergeRouteTable,
  type RouteTable,
  type RouteTableInputs,
  routeTableToJson,
} from "../../services/common/route-merge.js";
import { MESH_RECORD } from "../../services/common/service-name.js";

/** The current route table, changed only by content changes. */
export interface RouteTableFeed {
  /** The current table; undefined before the first {@link RouteTableFeed.update}. */
  readonly table: RouteTable | undefined;
  /**
   * Merges `inputs` into a table; when its content differs from the current
   * table's (see {@link tableFingerprint}) it becomes the current table and
   * is returned, otherwise the current table stays and undefined is returned.
   */
  update(inputs: RouteTableInputs): RouteTable | undefined;
  /** The current table as {@link routeTableToJson} text, made on first use after each change. */
  json(): string | undefined;
}

/** Creates an empty feed. */
export function createRouteTableFeed(): RouteTableFeed {
  let table: RouteTable | undefined;
  let fingerprint: string | undefined;
  let json: string | undefined;
  return {
    get table() {
      return table;
    },
    update(inputs) {
      const next = mergeRouteTable(inputs);
      const nextFingerprint = tableFingerprint(next);
      if (nextFingerprint === fingerprint) return undefined;
      table = next;
      fingerprint = nextFingerprint;
      json = undefined;
      return next;
    },
    json() {
      if (table !== undefined) json ??= routeTableToJson(table);
      return json;
    },
  };
}

/**
 * What both fingerprints record of one held projection: the version it is
 * held at and its signer (its signature's key id, `-` when unsigned). The
 * one place that says what makes two held values differ.
 */
function heldIdentity(version: string, projection: ServiceConfigProjection): string {
  return `${version} ${projection.signature?.keyId ?? "-"}`;
}

/**
 * What identifies a route table's content: each service's source, origin,
 * version and signer, and what its imported HTTPFilter references resolved
 * to; and the source, origin, version and signer of its mesh defaults.
 */
export function tableFingerprint(table: RouteTable): string {
  const mesh = table.meshDefaults;
  const meshLine =
    mesh === undefined
      ? []
      : [
          `${MESH_RECORD} ${mesh.source} ${mesh.origin} ${heldIdentity(mesh.version, mesh.projection)}`,
        ];
  return [
    ...meshLine,
    ...table.services.map(
      (e) =>
        `${e.service} ${e.source} ${e.origin} ${heldIdentity(e.version, e.projection)} ${e.resolution}`,
    ),
  ].join("\n");
}

/**
 * The fingerprint of what the last-known cache holds (the dependency set,
 * every imported candidate's key, version and signer, every local
 * projection's service and content version), to skip saves that would
 * change nothing.
 * Independent of map order.
 */
export function cacheFingerprint(
  state: {
    readonly services: readonly string[];
    readonly candidates: ReadonlyMap<string, ImportCandidate>;
  },
  local: ReadonlyMap<string, ServiceConfigProjection>,
): string {
  const imported = [...state.candidates.entries()].map(
    ([key, c]) => `${key}@${heldIdentity(c.projection.version, c.projection)}`,
  );
  const locals = [...local.values()].map((p) => `${p.service}@${localVersion(p)}`);
  return JSON.stringify([state.services, imported.sort(), locals.sort()]);
}

/** What the readiness decision reads. */
export interface ReadinessInputs {
  /** A last-known cache was loaded. */
  readonly cacheLoaded: boolean;
  /** The follower holds a complete state. */
  readonly imported: boolean;
  /** The size of the dependency set. */
  readonly dependencies: number;
  /** The local routes, when the agent has a local source: whether they synced or failed. */
  readonly local: { readonly synced: boolean; readonly failed: boolean } | undefined;
}

/**
 * Whether the agent has a route table worth serving: at once from a loaded
 * cache; otherwise once the imported side is complete (a state, or nothing
 * to import) and the local side is (no local source, its first snapshot, or
 * its failure: a broken local source does not hold the imported routes back).
 */
export function computeReady(inputs: ReadinessInputs): boolean {
  if (inputs.cacheLoaded) return true;
  const importedReady = inputs.imported || inputs.dependencies === 0;
  const localReady = inputs.local === undefined || inputs.local.synced || inputs.local.failed;
  return importedReady && localReady;
}
