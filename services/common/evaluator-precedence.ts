/**
 * Route precedence for the request evaluator: the ranks the Gateway API
 * defines for HTTPRoute and GRPCRoute matches, and the tie-breakers across
 * routes (oldest creation time, then `namespace/name`) and within a route
 * (first rule, first match). Pure, no I/O.
 *
 * HTTPRoute (`HTTPRouteRule.Matches`), after hostname precedence: an Exact
 * path beats a PathPrefix, which beats a RegularExpression (the spec leaves
 * regex precedence to the implementation; this follows Istio: Exact > Prefix >
 * Regex, longer values first within a type), then a method match, then more
 * header matches, then more query parameter matches.
 *
 * GRPCRoute (`GRPCRouteRule.Matches`): characters of a matching non-wildcard
 * hostname, characters of a matching hostname, characters of the matched
 * service, characters of the matched method, then the number of header
 * matches.
 */
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import {
  PathMatchType,
  type Route,
  type RouteMatch,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { compareRanks, firstPerName, type HostnameRank } from "./evaluator-match.js";

/** The rank of a path match type: Exact (3) > PathPrefix (2) > RegularExpression (1). */
export function pathTypeRank(type: PathMatchType): number {
  switch (type) {
    case PathMatchType.EXACT:
      return 3;
    case PathMatchType.PATH_PREFIX:
      return 2;
    case PathMatchType.REGULAR_EXPRESSION:
      return 1;
    default:
      return 0;
  }
}

/**
 * The precedence rank of a matching HTTPRoute match (undefined: the rule has
 * no matches, an implicit `PathPrefix /`), compared element-wise, larger
 * first: hostname ranks, path type, path length, method, headers, query
 * parameters.
 */
export function httpMatchRank(match: RouteMatch | undefined, host: HostnameRank): number[] {
  const path = match?.path;
  const typeRank =
    path === undefined ? pathTypeRank(PathMatchType.PATH_PREFIX) : pathTypeRank(path.type);
  const length = path === undefined ? 1 : path.value.length;
  return [
    host[0],
    host[1],
    typeRank,
    length,
    match !== undefined && match.method !== "" ? 1 : 0,
    match === undefined ? 0 : firstPerName(match.headers, true).length,
    match === undefined ? 0 : firstPerName(match.queryParams, false).length,
  ];
}

/**
 * The precedence rank of a matching GRPCRoute match, compared element-wise,
 * larger first: hostname ranks, service characters, method characters,
 * header matches.
 */
export function grpcMatchRank(match: RouteMatch | undefined, host: HostnameRank): number[] {
  return [
    host[0],
    host[1],
    match?.grpcMethod?.service.length ?? 0,
    match?.grpcMethod?.method.length ?? 0,
    match === undefined ? 0 : firstPerName(match.headers, true).length,
  ];
}

/**
 * Orders two creation times, the older first; an absent one counts as newest
 * (after every present one, equal to another absent one).
 */
export function compareTimestamps(a: Timestamp | undefined, b: Timestamp | undefined): number {
  if (a === undefined || b === undefined)
    return (a === undefined ? 1 : 0) - (b === undefined ? 1 : 0);
  if (a.seconds !== b.seconds) return a.seconds < b.seconds ? -1 : 1;
  return a.nanos - b.nanos;
}

/**
 * Orders two routes for a precedence tie: the older creation time first (a
 * route without one counts as newest), then `namespace/name` in code-point
 * order. Returns 0 for the same route identity.
 */
export function compareRoutes(a: Route, b: Route): number {
  const byTime = compareTimestamps(a.creationTime, b.creationTime);
  if (byTime !== 0) return byTime;
  const keyA = `${a.namespace}/${a.name}`;
  const keyB = `${b.namespace}/${b.name}`;
  return keyA < keyB ? -1 : keyA > keyB ? 1 : 0;
}

/** A (route, rule, match) that matched the request, with what orders it. */
export interface RankedCandidate {
  /** The route. */
  readonly route: Route;
  /** The position of the route's projection in the input, the last tie-breaker. */
  readonly sourceIndex: number;
  /** The rule's index in the route. */
  readonly ruleIndex: number;
  /** The match's index in the rule; -1 when the rule has no matches. */
  readonly matchIndex: number;
  /** The rank from {@link httpMatchRank} or {@link grpcMatchRank}. */
  readonly rank: readonly number[];
}

/**
 * Orders candidates best first: by rank, then route age and name, then
 * projection order, then rule order, then match order.
 */
export function compareCandidates(a: RankedCandidate, b: RankedCandidate): number {
  return (
    compareRanks(a.rank, b.rank) ||
    compareRoutes(a.route, b.route) ||
    a.sourceIndex - b.sourceIndex ||
    a.ruleIndex - b.ruleIndex ||
    a.matchIndex - b.matchIndex
  );
}
