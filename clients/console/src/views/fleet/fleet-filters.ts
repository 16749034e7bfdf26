/**
 * The fleet view's filters (namespace, service substring, cluster, state):
 * read from and written to the route's query (`#/fleet?ns=shop&q=cart&cluster=east&state=behind`),
 * the part GetFleetStatus can apply (clusters, states), and the part applied
 * here (namespace, substring). Pure.
 */
import { create } from "@bufbuild/protobuf";
import {
  type GetFleetStatusRequest,
  GetFleetStatusRequestSchema,
} from "../../../../../gen/aether/registry/v1/fleet_pb.js";
import { type CellState, fleetStateOf, isCellState } from "./fleet-format.js";

/** The largest `limit` GetFleetStatus accepts. */
export const FLEET_LIMIT = 1000;

/** The filters; empty strings mean "any". */
export interface FleetFilters {
  /** The namespace, exactly. */
  readonly ns: string;
  /** A substring of `namespace/name` (case-insensitive). */
  readonly q: string;
  /** One cluster, exactly. */
  readonly cluster: string;
  /** One state; empty for any. */
  readonly state: CellState | "";
}

/** No filter. */
export const NO_FILTERS: FleetFilters = { ns: "", q: "", cluster: "", state: "" };

/** The filters of a route's query; unknown states are ignored. */
export function filtersOf(query: ReadonlyMap<string, string>): FleetFilters {
  const state = query.get("state") ?? "";
  return {
    ns: (query.get("ns") ?? "").trim(),
    q: (query.get("q") ?? "").trim(),
    cluster: (query.get("cluster") ?? "").trim(),
    state: isCellState(state) ? state : "",
  };
}

/** The query entries of `filters` (for `formatRoute`; empty values are left out there). */
export function filterQuery(filters: FleetFilters): [string, string][] {
  return [
    ["ns", filters.ns],
    ["q", filters.q],
    ["cluster", filters.cluster],
    ["state", filters.state],
  ];
}

/** The GetFleetStatus request for `filters`: the cluster and state go to the server. */
export function fleetRequest(filters: FleetFilters): GetFleetStatusRequest {
  return create(GetFleetStatusRequestSchema, {
    clusters: filters.cluster === "" ? [] : [filters.cluster],
    states: filters.state === "" ? [] : [fleetStateOf(filters.state)],
    limit: FLEET_LIMIT,
  });
}

/** Whether `service` (`namespace/name`) passes the namespace and substring filters. */
export function serviceMatches(service: string, filters: FleetFilters): boolean {
  if (filters.ns !== "" && !service.startsWith(`${filters.ns}/`)) return false;
  return filters.q === "" || service.toLowerCase().includes(filters.q.toLowerCase());
}
