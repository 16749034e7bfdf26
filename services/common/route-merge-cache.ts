/**
 * The route table merge for a caller that merges again on every change
 * (the agent): the same tables as {@link mergeRouteTable}, but an entry
 * whose inputs are the very objects of the previous merge (the service's
 * local projection, its imported winner, the filters, the cluster) is the
 * previous entry, not made again: one changed service costs one entry, not
 * a resolution of every service's HTTPFilter references. When nothing
 * changed the previous table itself is returned.
 *
 * It relies on the inputs being immutable, as everywhere in the agent: an
 * object passed again is taken to hold what it held (a new projection, a
 * new candidate, a new filters map is a new object). Pure apart from that
 * memory; no I/O.
 */
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import type { ImportCandidate } from "./import-policy.js";
import {
  type MeshDefaultsEntry,
  mergedDependencies,
  mergeMeshDefaults,
  type RouteTable,
  type RouteTableEntry,
  type RouteTableInputs,
  routeTableEntry,
} from "./route-merge.js";
import { MESH_RECORD } from "./service-name.js";

/** What one service's (or the mesh defaults') entry was made from, and the entry. */
interface Made<E> {
  readonly local: ServiceConfigProjection | undefined;
  readonly imported: ImportCandidate | undefined;
  readonly filters: RouteTableInputs["filters"];
  readonly cluster: string;
  readonly entry: E | undefined;
}

/** Whether `made` was made from exactly these inputs. */
function sameInputs<E>(
  made: Made<E> | undefined,
  local: ServiceConfigProjection | undefined,
  imported: ImportCandidate | undefined,
  inputs: RouteTableInputs,
): made is Made<E> {
  return (
    made !== undefined &&
    made.local === local &&
    made.imported === imported &&
    made.filters === inputs.filters &&
    made.cluster === inputs.cluster
  );
}

/**
 * Creates a merge with the contract of {@link mergeRouteTable} (equal
 * inputs, an equal table) that reuses the previous merge's entries, its
 * sorted dependency set (when `dependencies` is the same object) and, when
 * every part is reused, the previous table object; see the module comment.
 */
export function createRouteTableMerger(): (inputs: RouteTableInputs) => RouteTable {
  let dependencies: Iterable<string> | undefined;
  let sorted: string[] = [];
  let made = new Map<string, Made<RouteTableEntry>>();
  let mesh: Made<MeshDefaultsEntry> | undefined;
  let last: RouteTable | undefined;

  return (inputs) => {
    if (inputs.dependencies !== dependencies) {
      dependencies = inputs.dependencies;
      sorted = mergedDependencies(dependencies);
    }
    const next = new Map<string, Made<RouteTableEntry>>();
    const services: RouteTableEntry[] = [];
    let reused = last !== undefined;
    for (const service of sorted) {
      const local = inputs.local.get(service);
      const imported = inputs.imported.get(service);
      let memo = made.get(service);
      if (!sameInputs(memo, local, imported, inputs)) {
        reused = false;
        const entry = routeTableEntry(service, local, imported, inputs);
        memo = { local, imported, filters: inputs.filters, cluster: inputs.cluster, entry };
      }
      next.set(service, memo);
      if (memo.entry === undefined) continue;
      if (last?.services[services.length] !== memo.entry) reused = false;
      services.push(memo.entry);
    }
    made = next;
    if (last?.services.length !== services.length) reused = false;
    let meshDefaults: MeshDefaultsEntry | undefined;
    if (sorted.length > 0) {
      const local = inputs.local.get(MESH_RECORD);
      const imported = inputs.imported.get(MESH_RECORD);
      if (!sameInputs(mesh, local, imported, inputs)) {
        const entry = mergeMeshDefaults(local, imported, inputs.cluster);
        mesh = { local, imported, filters: inputs.filters, cluster: inputs.cluster, entry };
      }
      meshDefaults = mesh.entry;
    }
    if (reused && last?.meshDefaults === meshDefaults) return last as RouteTable;
    last = meshDefaults === undefined ? { services } : { services, meshDefaults };
    return last;
  };
}
