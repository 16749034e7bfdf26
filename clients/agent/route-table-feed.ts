/**
 * The agent's route table feed: the merge of local and imported config
 * (`mergeRouteTable` in `services/common/route-merge.ts`) kept as the current table, changed only when its
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
 * reads it (`--out`, `GET /routes`). The merge reuses the entries of
 * services whose inputs did not change (`route-merge-cache.ts`), and a
 * merge that reused everything is the current table itself: no
 * fingerprint is made for it.
 */
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import type { ImportCandidate } from "../../services/common/import-policy.js";
import { localVersion } from "../../services/common/projection-content.js";
import {
  type RouteTable,
  type RouteTableEntry,
  type RouteTableInputs,
  routeTableToJson,
} from "../../services/common/route-merge.js";
import { createRouteTableMerger } from "../../services/common/route-merge-cache.js";
import { MESH_RECORD } from "../../services/common/service-name.js";

/** The current route table, changed only by content changes. */
export interface RouteTableFeed {
  /** The current table; undefined before the first {@link RouteTableFeed.update}. */
  readonly table: RouteTable | undefined;
  /**
   * Merges `inputs` into a table (`mergeRouteTable`'s); when its content differs from the current
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
  let json: string | undefined;
  const merge = createRouteTableMerger();
  return {
    get table() {
      return table;
    },
    update(inputs) {
      const next = merge(inputs);
      if (table !== undefined && sameContent(table, next)) return undefined;
      table = next;
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
  const mesh = meshLine(table);
  return [...(mesh === undefined ? [] : [mesh]), ...table.services.map(entryLine)].join("\n");
}

/** The fingerprint line of a table's mesh defaults; undefined when it has none. */
function meshLine(table: RouteTable): string | undefined {
  const mesh = table.meshDefaults;
  return mesh === undefined
    ? undefined
    : `${MESH_RECORD} ${mesh.source} ${mesh.origin} ${heldIdentity(mesh.version, mesh.projection)}`;
}

/**
 * Whether two tables have the same content: their {@link tableFingerprint}s
 * are equal. Compared entry by entry, an entry object shared by both (the
 * merge reuses what did not change) without making its line.
 */
export function sameContent(a: RouteTable, b: RouteTable): boolean {
  if (a === b) return true;
  if (a.services.length !== b.services.length) return false;
  if (a.meshDefaults !== b.meshDefaults && meshLine(a) !== meshLine(b)) return false;
  return a.services.every((e, i) => {
    const other = b.services[i] as RouteTableEntry;
    return e === other || entryLine(e) === entryLine(other);
  });
}

/** Each entry's fingerprint line, made once per entry object (entries are immutable). */
const entryLines = new WeakMap<RouteTableEntry, string>();

function entryLine(e: RouteTableEntry): string {
  let line = entryLines.get(e);
  if (line === undefined) {
    line = `${e.service} ${e.source} ${e.origin} ${heldIdentity(e.version, e.projection)} ${e.resolution}`;
    entryLines.set(e, line);
  }
  return line;
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
