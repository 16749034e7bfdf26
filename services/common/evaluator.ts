/**
 * The request evaluator: given the routes that apply (from one or more
 * ServiceConfigProjections) and a request, it decides what the data plane
 * does, following the Gateway API's HTTPRoute and GRPCRoute semantics and,
 * in the mesh, GAMMA's producer and consumer routes. It is what makes "the
 * same routing decision in every cluster" checkable, and what
 * `aetherctl explain` prints.
 *
 * Pure: no I/O, no clock; the only randomness is the injected `random`.
 */
import {
  type Backend,
  type ExtensionRef,
  type Filter,
  type Fraction,
  PathMatchType,
  type Route,
  RouteKind,
  type RouteMatch,
  RouteRole,
  type RouteRule,
  type ServiceConfigProjection,
} from "../../gen/aether/registry/v1/projection_pb.js";
import {
  buildRedirect,
  corsOriginAllowed,
  corsResponseChanges,
  isCorsPreflight,
  modifyPath,
  type RedirectBase,
  timeoutsOf,
  wellKnownPort,
} from "./evaluator-filters.js";
import {
  applyHeaderChanges,
  headerModifierChanges,
  headerValue,
  normalizeHeaders,
} from "./evaluator-headers.js";
import {
  bestHostname,
  grpcMethodMatches,
  type HostnameRank,
  headersMatch,
  hostWithoutPort,
  parseQuery,
  pathMatches,
  portOfAuthority,
  queryParamsMatch,
  splitTarget,
} from "./evaluator-match.js";
import { NO_POLICIES, policiesInEffect } from "./evaluator-mesh-defaults.js";
import {
  compareCandidates,
  grpcMatchRank,
  httpMatchRank,
  type RankedCandidate,
} from "./evaluator-precedence.js";
import { grpcStatusForHttp, noBackendStatus } from "./evaluator-status.js";
import type {
  Decision,
  DecisionBackend,
  DecisionCors,
  DecisionMirror,
  DecisionOutcome,
  DecisionRedirect,
  DecisionRoute,
  EvaluateInput,
  HeaderChange,
  HeaderMap,
  MeshDestination,
} from "./evaluator-types.js";

export { applyHeaderChanges, headerValue, normalizeHeaders } from "./evaluator-headers.js";
export { hostnameMatches, hostWithoutPort } from "./evaluator-match.js";
export { grpcStatusForHttp } from "./evaluator-status.js";
export type * from "./evaluator-types.js";

/** A route with the projection it came from. */
interface RouteEntry {
  readonly route: Route;
  readonly projection: ServiceConfigProjection;
  readonly sourceIndex: number;
}

/** The request in the form the matcher needs. */
interface PreparedRequest {
  readonly grpc: boolean;
  readonly method: string;
  readonly scheme: string;
  readonly authority: string;
  readonly host: string;
  readonly port: number;
  readonly target: string;
  readonly path: string;
  readonly query: string | undefined;
  readonly params: ReadonlyMap<string, readonly string[]>;
  readonly headers: HeaderMap;
  readonly grpcService: string;
  readonly grpcMethod: string;
}

interface Candidate extends RankedCandidate {
  readonly entry: RouteEntry;
  readonly match: RouteMatch | undefined;
  readonly hostname: string | undefined;
}

function prepare(input: EvaluateInput): PreparedRequest {
  const request = input.request;
  if (request.kind === "grpc") {
    const scheme = request.scheme ?? "http";
    const target = `/${request.service}/${request.method}`;
    const headers = normalizeHeaders(request.metadata);
    return {
      grpc: true,
      method: "POST",
      scheme,
      authority: request.authority,
      host: hostWithoutPort(request.authority),
      port: request.port ?? portOfAuthority(request.authority) ?? wellKnownPort(scheme) ?? 80,
      target,
      path: target,
      query: undefined,
      params: new Map(),
      headers:
        headers["content-type"] === undefined
          ? { ...headers, "content-type": ["application/grpc"] }
          : headers,
      grpcService: request.service,
      grpcMethod: request.method,
    };
  }
  const scheme = request.scheme ?? "http";
  const { path, query } = splitTarget(request.path);
  return {
    grpc: false,
    method: request.method,
    scheme,
    authority: request.host,
    host: hostWithoutPort(request.host),
    port: request.port ?? portOfAuthority(request.host) ?? wellKnownPort(scheme) ?? 80,
    target: request.path,
    path,
    query,
    params: parseQuery(query),
    headers: normalizeHeaders(request.headers),
    grpcService: "",
    grpcMethod: "",
  };
}

function collectRoutes(projections: readonly ServiceConfigProjection[]): RouteEntry[] {
  const entries: RouteEntry[] = [];
  projections.forEach((projection, sourceIndex) => {
    for (const route of projection.routes) {
      if (route.kind === RouteKind.HTTP || route.kind === RouteKind.GRPC) {
        entries.push({ route, projection, sourceIndex });
      }
    }
  });
  return entries;
}

function attachesTo(route: Route, mesh: MeshDestination, anyPort: boolean): boolean {
  return route.parentRefs.some(
    (ref) =>
      ref.service === mesh.service &&
      (anyPort ||
        ((ref.port === 0 || ref.port === mesh.port) &&
          (ref.sectionName === "" || ref.sectionName === mesh.portName))),
  );
}

/**
 * Selects the mesh routes for a caller: consumer routes of the caller's
 * namespace when any attaches to the service, else the producer routes; then
 * those attached to the dialled port; then, when GRPCRoutes are among them,
 * only those (GEP-1294: GRPCRoute > HTTPRoute for one service port).
 */
function selectMeshRoutes(entries: readonly RouteEntry[], mesh: MeshDestination): RouteEntry[] {
  const consumers = entries.filter(
    (e) =>
      e.route.role === RouteRole.CONSUMER &&
      e.route.namespace === mesh.callerNamespace &&
      attachesTo(e.route, mesh, true),
  );
  const group =
    consumers.length > 0 ? consumers : entries.filter((e) => e.route.role === RouteRole.PRODUCER);
  const onPort = group.filter((e) => attachesTo(e.route, mesh, false));
  const grpc = onPort.filter((e) => e.route.kind === RouteKind.GRPC);
  return grpc.length > 0 ? grpc : onPort;
}

function matchHolds(match: RouteMatch, request: PreparedRequest, grpcRoute: boolean): boolean {
  if (!headersMatch(match.headers, request.headers)) return false;
  if (grpcRoute)
    return grpcMethodMatches(match.grpcMethod, request.grpcService, request.grpcMethod);
  return (
    pathMatches(match.path, request.path) &&
    (match.method === "" || match.method === request.method) &&
    queryParamsMatch(match.queryParams, request.params)
  );
}

function findCandidates(
  entries: readonly RouteEntry[],
  request: PreparedRequest,
  useHostnames: boolean,
): Candidate[] {
  const candidates: Candidate[] = [];
  for (const entry of entries) {
    const { route } = entry;
    const host = useHostnames
      ? bestHostname(route.hostnames, request.host)
      : { hostname: undefined, rank: [0, 0] as HostnameRank };
    if (host === undefined) continue;
    const grpcRoute = route.kind === RouteKind.GRPC;
    const rankOf = grpcRoute ? grpcMatchRank : httpMatchRank;
    route.rules.forEach((rule, ruleIndex) => {
      const base = {
        entry,
        route,
        sourceIndex: entry.sourceIndex,
        ruleIndex,
        hostname: host.hostname,
      };
      if (rule.matches.length === 0) {
        candidates.push({
          ...base,
          matchIndex: -1,
          match: undefined,
          rank: rankOf(undefined, host.rank),
        });
        return;
      }
      rule.matches.forEach((match, matchIndex) => {
        if (matchHolds(match, request, grpcRoute)) {
          candidates.push({ ...base, matchIndex, match, rank: rankOf(match, host.rank) });
        }
      });
    });
  }
  return candidates.sort(compareCandidates);
}

function describeRoute(route: DecisionRoute): string {
  return `${route.kind} ${route.namespace}/${route.name}${route.originCluster === "" ? "" : ` (from ${route.originCluster})`}`;
}

function decisionRoute(entry: RouteEntry): DecisionRoute {
  const { route, projection } = entry;
  return {
    kind: route.kind === RouteKind.GRPC ? "GRPCRoute" : "HTTPRoute",
    namespace: route.namespace,
    name: route.name,
    originCluster: projection.originCluster,
    projectionService: projection.service,
    role:
      route.role === RouteRole.PRODUCER
        ? "producer"
        : route.role === RouteRole.CONSUMER
          ? "consumer"
          : "unspecified",
  };
}

function decisionBackend(backend: Backend, index: number): DecisionBackend {
  return {
    service: backend.service,
    port: backend.port,
    weight: backend.weight,
    index,
    appProtocol: backend.appProtocol,
  };
}

/** The mutable state of applying one rule's filters. */
interface FilterState {
  headers: HeaderMap;
  readonly requestHeaderChanges: HeaderChange[];
  readonly responseHeaderChanges: HeaderChange[];
  rewrite: { path: string; host: string } | undefined;
  redirect: DecisionRedirect | undefined;
  cors: DecisionCors | undefined;
  readonly mirrors: { backend: Backend; fraction: Fraction | undefined }[];
  readonly extensionRefs: ExtensionRef[];
}

/** What ended filter processing early, if anything. */
type FilterStop = "redirect" | "preflight" | "unresolved" | undefined;

function matchedPrefixOf(match: RouteMatch | undefined): string | undefined {
  if (match === undefined || match.path === undefined) return "/";
  return match.path.type === PathMatchType.PATH_PREFIX ? match.path.value : undefined;
}

function runFilters(
  filters: readonly Filter[],
  state: FilterState,
  request: PreparedRequest,
  matchedPrefix: string | undefined,
): FilterStop {
  for (const { filter } of filters) {
    switch (filter.case) {
      case "requestHeaderModifier": {
        const changes = headerModifierChanges(filter.value);
        state.requestHeaderChanges.push(...changes);
        state.headers = applyHeaderChanges(state.headers, changes);
        break;
      }
      case "responseHeaderModifier":
        state.responseHeaderChanges.push(...headerModifierChanges(filter.value));
        break;
      case "requestRedirect": {
        const base: RedirectBase = {
          scheme: request.scheme,
          hostname: request.host,
          port: request.port,
          path: request.path,
          query: request.query,
        };
        state.redirect = buildRedirect(filter.value, base, matchedPrefix);
        return "redirect";
      }
      case "urlRewrite": {
        const current = state.rewrite ?? { path: request.target, host: request.authority };
        const { path, hostname } = filter.value;
        const query = request.query === undefined ? "" : `?${request.query}`;
        state.rewrite = {
          path:
            path === undefined
              ? current.path
              : `${modifyPath(path, request.path, matchedPrefix)}${query}`,
          host: hostname ?? current.host,
        };
        break;
      }
      case "requestMirror":
        if (filter.value.backend !== undefined) {
          state.mirrors.push({ backend: filter.value.backend, fraction: filter.value.fraction });
        }
        break;
      case "extensionRef":
        state.extensionRefs.push(filter.value);
        if (filter.value.unresolvedReason !== "") return "unresolved";
        break;
      case "cors": {
        const origin = headerValue(state.headers, "origin");
        const preflight = isCorsPreflight(request.method, state.headers);
        const originAllowed = origin !== undefined && corsOriginAllowed(filter.value, origin);
        state.cors = { policy: filter.value, preflight, origin, originAllowed };
        if (originAllowed) {
          state.responseHeaderChanges.push(
            ...corsResponseChanges(filter.value, origin, preflight, state.headers),
          );
        }
        if (preflight) return "preflight";
        break;
      }
      default:
        break;
    }
  }
  return undefined;
}

function pickBackend(
  backends: readonly Backend[],
  random: () => number,
): { backend: Backend; index: number } | undefined {
  const positive = backends
    .map((backend, index) => ({ backend, index }))
    .filter(({ backend }) => backend.weight > 0);
  if (positive.length <= 1) return positive[0];
  const total = positive.reduce((sum, { backend }) => sum + backend.weight, 0);
  const draw = Math.min(Math.max(random(), 0), 1) * total;
  let cumulative = 0;
  for (const choice of positive) {
    cumulative += choice.backend.weight;
    if (draw < cumulative) return choice;
  }
  return positive[positive.length - 1];
}

function fractionShare(fraction: Fraction | undefined): number {
  if (fraction === undefined) return 1;
  const denominator = fraction.denominator === 0 ? 100 : fraction.denominator;
  return Math.min(fraction.numerator / denominator, 1);
}

function emptyDecision(
  outcome: DecisionOutcome,
  status: number,
  request: PreparedRequest,
  reason: string,
): Decision {
  return {
    outcome,
    status,
    grpcStatus: request.grpc ? grpcStatusForHttp(status) : undefined,
    reason,
    route: undefined,
    ruleIndex: undefined,
    ruleName: undefined,
    matchIndex: undefined,
    match: undefined,
    hostname: undefined,
    matchedCandidates: 0,
    backend: undefined,
    requestHeaders: request.headers,
    requestHeaderChanges: [],
    responseHeaderChanges: [],
    forwarded: undefined,
    rewrite: undefined,
    redirect: undefined,
    mirrors: [],
    timeouts: undefined,
    ...NO_POLICIES,
    cors: undefined,
    extensionRefs: [],
  };
}

function applyRule(
  winner: Candidate,
  matchedCandidates: number,
  request: PreparedRequest,
  input: EvaluateInput,
): Decision {
  const rule = winner.route.rules[winner.ruleIndex] as RouteRule;
  const route = decisionRoute(winner.entry);
  const random = input.random ?? (() => 0);
  const resolvable = input.isBackendResolvable ?? ((backend: Backend) => backend.service !== "");
  const matchedPrefix = matchedPrefixOf(winner.match);
  const where = `${describeRoute(route)} rule ${winner.ruleIndex}${rule.name === "" ? "" : ` (${rule.name})`}${
    winner.matchIndex < 0 ? " (no matches: matches every request)" : ` match ${winner.matchIndex}`
  }`;
  const state: FilterState = {
    headers: request.headers,
    requestHeaderChanges: [],
    responseHeaderChanges: [],
    rewrite: undefined,
    redirect: undefined,
    cors: undefined,
    mirrors: [],
    extensionRefs: [],
  };
  let backend: DecisionBackend | undefined;
  const finish = (outcome: DecisionOutcome, status: number, reason: string): Decision => {
    const forwardedTo = outcome === "forwarded";
    const mirrors: DecisionMirror[] = state.mirrors.map(({ backend: mirror, fraction }) => {
      const share = fractionShare(fraction);
      const mirrored =
        forwardedTo &&
        resolvable(mirror, winner.route) &&
        (share >= 1 || (share > 0 && random() < share));
      return { service: mirror.service, port: mirror.port, percent: share * 100, mirrored };
    });
    return {
      ...emptyDecision(outcome, status, request, `${where} matched; ${reason}`),
      route,
      ruleIndex: winner.ruleIndex,
      ruleName: rule.name === "" ? undefined : rule.name,
      matchIndex: winner.matchIndex < 0 ? undefined : winner.matchIndex,
      match: winner.match,
      hostname: winner.hostname,
      matchedCandidates,
      backend,
      requestHeaders: state.headers,
      requestHeaderChanges: state.requestHeaderChanges,
      responseHeaderChanges: state.responseHeaderChanges,
      forwarded: forwardedTo
        ? (state.rewrite ?? { path: request.target, host: request.authority })
        : undefined,
      rewrite: state.rewrite,
      redirect: state.redirect,
      mirrors,
      timeouts: timeoutsOf(rule.timeouts),
      ...(forwardedTo ? policiesInEffect(rule, input.meshDefaults) : NO_POLICIES),
      cors: state.cors,
      extensionRefs: state.extensionRefs,
    };
  };
  const stopped = (stop: FilterStop): Decision | undefined => {
    if (stop === "redirect" && state.redirect !== undefined) {
      return finish(
        "redirected",
        state.redirect.statusCode,
        `redirected (${state.redirect.statusCode}) to ${state.redirect.location}`,
      );
    }
    const unresolved = state.extensionRefs.at(-1);
    if (stop === "unresolved" && unresolved !== undefined) {
      return finish(
        "unresolved-filter",
        500,
        `ExtensionRef filter ${unresolved.kind} ${unresolved.name} cannot run: ${unresolved.unresolvedReason}`,
      );
    }
    if (stop === "preflight") {
      const allowed = state.cors?.originAllowed ?? false;
      return finish(
        "cors-preflight",
        allowed ? 204 : 403,
        allowed
          ? "CORS preflight answered by the CORS filter"
          : `CORS preflight refused: origin ${state.cors?.origin ?? "(none)"} is not allowed`,
      );
    }
    return undefined;
  };

  const ruleStop = stopped(runFilters(rule.filters, state, request, matchedPrefix));
  if (ruleStop !== undefined) return ruleStop;
  // The GRPCRoute spec answers an unusable backend with UNAVAILABLE, the HTTPRoute spec with 500.
  const noBackend = (why: string): Decision =>
    finish("no-backend", noBackendStatus(winner.route.kind), why);
  if (rule.backends.length === 0) return noBackend("the rule has no backends");
  const picked = pickBackend(rule.backends, random);
  if (picked === undefined) return noBackend("every backend of the rule has weight 0");
  backend = decisionBackend(picked.backend, picked.index);
  if (!resolvable(picked.backend, winner.route)) {
    return noBackend(
      `backend ${picked.index} (${picked.backend.service || "unresolved"}) cannot be resolved`,
    );
  }
  const backendStop = stopped(runFilters(picked.backend.filters, state, request, matchedPrefix));
  if (backendStop !== undefined) return backendStop;
  return finish("forwarded", 200, `forwarded to ${backend.service}:${backend.port}`);
}

/**
 * Decides a request. The routes of every projection in `input.projections`
 * are candidates (in the mesh, only those GAMMA selects for the caller and
 * the dialled port); every match of every rule is tried, and the winner is
 * chosen by the Gateway API precedence rules (see evaluator-precedence.ts).
 * The winning rule's filters run in order, then a backend is picked by
 * weight and its own filters run. Nothing matching gives 404 (gRPC:
 * Unimplemented); a mesh destination without routes is forwarded to the
 * Service itself.
 */
export function evaluate(input: EvaluateInput): Decision {
  const request = prepare(input);
  let entries = collectRoutes(input.projections);
  const { mesh } = input;
  if (mesh !== undefined) {
    entries = selectMeshRoutes(entries, mesh);
    if (entries.length === 0) {
      return {
        ...emptyDecision(
          "passthrough",
          200,
          request,
          `no route attaches to ${mesh.service}:${mesh.port} for callers in ${mesh.callerNamespace}; the request goes to the Service`,
        ),
        backend: { service: mesh.service, port: mesh.port, weight: 1, index: -1, appProtocol: "" },
        forwarded: { path: request.target, host: request.authority },
        ...policiesInEffect(undefined, input.meshDefaults),
      };
    }
  }
  const grpcEntries = entries.filter((e) => e.route.kind === RouteKind.GRPC);
  const httpEntries = entries.filter((e) => e.route.kind === RouteKind.HTTP);
  const applicable = request.grpc && grpcEntries.length > 0 ? grpcEntries : httpEntries;
  const candidates = findCandidates(applicable, request, mesh === undefined);
  const winner = candidates[0];
  if (winner === undefined) {
    const what = request.grpc
      ? `gRPC ${request.grpcService}/${request.grpcMethod}`
      : `${request.method} ${request.target}`;
    return emptyDecision(
      "no-route",
      404,
      request,
      `no match of the ${applicable.length} applicable route(s) matches ${what} (host ${request.host})`,
    );
  }
  return applyRule(winner, candidates.length, request, input);
}
