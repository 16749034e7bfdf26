/**
 * The agent's dependency set: the services given through its options or
 * its `setDependencies` (checked: a bad entry throws), together with those
 * read from its dependency file, without duplicates and sorted. No I/O.
 */
import { checkServiceName, MESH_RECORD } from "../../services/common/service-name.js";

/**
 * The records the agent follows for a dependency set: its services and the
 * mesh record (`@mesh`, the origin's mesh-wide defaults), which the agent adds
 * itself (a user cannot name it as a dependency); nothing for an empty set,
 * whose table is empty, mesh defaults included.
 */
export function followedRecords(services: readonly string[]): string[] {
  return services.length === 0 ? [] : [...services, MESH_RECORD];
}

/** The dependency set; see the module comment. */
export interface DependencySet {
  /** The set as last computed, sorted. */
  readonly services: readonly string[];
  /**
   * Replaces the given services (not the file's) without recomputing the
   * set. Throws a TypeError naming the first entry that is not
   * `namespace/name`, and then changes nothing.
   */
  setGiven(services: Iterable<string>): void;
  /** Recomputes the set from the given services and the file's; true when it changed. */
  refresh(): boolean;
}

function checked(services: Iterable<string>): string[] {
  const list = [...services];
  for (const service of list) {
    const problem = checkServiceName(service);
    if (problem !== undefined) throw new TypeError(`dependency set: ${problem}`);
  }
  return list;
}

/**
 * Creates the set from `given` (checked, so this throws like
 * {@link DependencySet.setGiven}); the file's services (`fromFile`) join at
 * the first {@link DependencySet.refresh}.
 */
export function createDependencySet(
  given: Iterable<string>,
  fromFile: () => readonly string[],
): DependencySet {
  let givenList = checked(given);
  let services: readonly string[] = [...new Set(givenList)].sort();
  return {
    get services() {
      return services;
    },
    setGiven(next) {
      givenList = checked(next);
    },
    refresh() {
      const next = [...new Set([...givenList, ...fromFile()])].sort();
      if (next.join(",") === services.join(",")) return false;
      services = next;
      return true;
    },
  };
}
