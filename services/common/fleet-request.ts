/**
 * The checks of a GetFleetStatus request (see `fleet-aggregate.ts`): its
 * filters and limit, turned into the query the fleet view answers. Pure, no
 * I/O: a fault is returned as a sentence (the registrar answers it as
 * INVALID_ARGUMENT), never thrown.
 */
import { FleetState, type GetFleetStatusRequest } from "../../gen/aether/registry/v1/fleet_pb.js";
import { checkClusterName, checkRecordName } from "./service-name.js";

/** The limit a request that leaves it 0 gets. */
export const DEFAULT_FLEET_LIMIT = 100;
/** The largest limit a request may ask for. */
export const MAX_FLEET_LIMIT = 1000;
/** The most services one request may name. */
export const MAX_FLEET_SERVICE_FILTERS = 10_000;
/** The most clusters one request may name. */
export const MAX_FLEET_CLUSTER_FILTERS = 1000;

/** A checked request: each filter a set (undefined: no filter), the limit resolved. */
export interface FleetQuery {
  /** Only these services; undefined means all. */
  readonly services: ReadonlySet<string> | undefined;
  /** Only these clusters; undefined means all. */
  readonly clusters: ReadonlySet<string> | undefined;
  /** Only services whose worst state is one of these; undefined means any. */
  readonly states: ReadonlySet<FleetState> | undefined;
  /** At most this many services, 1 to {@link MAX_FLEET_LIMIT}. */
  readonly limit: number;
}

/** The query of a request without filters or limit: every service and cluster, the default limit. */
export const ALL_OF_THE_FLEET: FleetQuery = {
  services: undefined,
  clusters: undefined,
  states: undefined,
  limit: DEFAULT_FLEET_LIMIT,
};

/** What {@link checkFleetRequest} concludes: the query, or why the request is refused. */
export type FleetRequestCheck =
  | { readonly ok: true; readonly query: FleetQuery }
  | { readonly ok: false; readonly problem: string };

const KNOWN_STATES: ReadonlySet<number> = new Set([
  FleetState.IN_SYNC,
  FleetState.BEHIND,
  FleetState.REJECTING,
  FleetState.DRIFTED,
  FleetState.STALE,
]);

/**
 * Checks a request: `limit` 0 to 1000 (0 means 100); `services` at most
 * 10000 record names (`namespace/name` or `@mesh`), `clusters` at most 1000
 * cluster names (DNS-1123 labels), `states` known states other than
 * UNSPECIFIED; no filter names a value twice. Faults are checked in that
 * order and the first one is returned.
 */
export function checkFleetRequest(request: GetFleetStatusRequest): FleetRequestCheck {
  const { limit } = request;
  if (!Number.isInteger(limit) || limit < 0 || limit > MAX_FLEET_LIMIT) {
    const problem = `limit ${limit} must be 0 to ${MAX_FLEET_LIMIT} (0 means ${DEFAULT_FLEET_LIMIT})`;
    return { ok: false, problem };
  }
  try {
    const query: FleetQuery = {
      services: checkFilter(
        "services",
        request.services,
        MAX_FLEET_SERVICE_FILTERS,
        checkRecordName,
      ),
      clusters: checkFilter(
        "clusters",
        request.clusters,
        MAX_FLEET_CLUSTER_FILTERS,
        checkClusterName,
      ),
      states: checkFilter("states", request.states, KNOWN_STATES.size, checkState),
      limit: limit === 0 ? DEFAULT_FLEET_LIMIT : limit,
    };
    return { ok: true, query };
  } catch (error) {
    if (error instanceof FilterProblem) return { ok: false, problem: error.message };
    throw error;
  }
}

/** What is wrong with a filter (thrown by {@link checkFilter}, caught by {@link checkFleetRequest}). */
class FilterProblem extends Error {}

function checkState(state: FleetState): string | undefined {
  return KNOWN_STATES.has(state)
    ? undefined
    : `state ${state} is not one of IN_SYNC, BEHIND, REJECTING, DRIFTED, STALE`;
}

/** One filter as a set (undefined when empty); throws a {@link FilterProblem} saying what is wrong with it. */
function checkFilter<T>(
  field: string,
  values: readonly T[],
  max: number,
  check: (value: T) => string | undefined,
): ReadonlySet<T> | undefined {
  if (values.length > max) {
    throw new FilterProblem(`${field} names ${values.length} values; at most ${max} are allowed`);
  }
  const set = new Set<T>();
  for (const value of values) {
    const problem = check(value);
    if (problem !== undefined) throw new FilterProblem(`${field}: ${problem}`);
    if (set.has(value)) throw new FilterProblem(`${field} names ${JSON.stringify(value)} twice`);
    set.add(value);
  }
  return set.size === 0 ? undefined : set;
}
