/**
 * The public types of the request evaluator: what it is asked (routes and a
 * request) and what it answers (a {@link Decision} that says which route, rule
 * and match decided the request, and what happens to it). Pure types, no code.
 */
import type {
  Backend,
  Cors,
  ExtensionRef,
  MeshConfig,
  Route,
  RouteMatch,
  ServiceConfigProjection,
} from "../../gen/aether/registry/v1/projection_pb.js";

/**
 * Request headers (or gRPC metadata) as the caller gives them: a record whose
 * values are one string or several (in arrival order), or a list of
 * `[name, value]` pairs. Names are compared case-insensitively.
 */
export type HeaderInput =
  | Readonly<Record<string, string | readonly string[]>>
  | readonly (readonly [string, string])[];

/**
 * Headers in the evaluator's canonical form: lower-case names mapped to their
 * values in arrival order. A header with several values is compared joined
 * with `,` (RFC 9110 field-line combination).
 */
export type HeaderMap = Readonly<Record<string, readonly string[]>>;

/** One header operation of a header modifier, in the order the data plane applies them. */
export interface HeaderChange {
  /** `set` replaces every value, `add` appends one value, `remove` drops the header. */
  readonly op: "set" | "add" | "remove";
  /** The header name, lower case. */
  readonly name: string;
  /** The value for `set` and `add`; empty for `remove`. */
  readonly value: string;
}

/** An HTTP request to evaluate. */
export interface HttpRequestInput {
  /** Discriminates HTTP from gRPC requests. */
  readonly kind: "http";
  /** The method, as sent (methods are case-sensitive), for example `GET`. */
  readonly method: string;
  /** The scheme the caller used (`http` or `https`); defaults to `http`. */
  readonly scheme?: string;
  /** The authority (Host header), possibly with a port; a port is ignored for hostname matching. */
  readonly host: string;
  /**
   * The port the request was received on (the Gateway listener port, or the
   * Service port in the mesh); used for redirect Locations. Defaults to the
   * port in `host`, else the scheme's well-known port.
   */
  readonly port?: number;
  /** The request target: the path plus an optional `?query`. */
  readonly path: string;
  /** The request headers. */
  readonly headers?: HeaderInput;
}

/** A gRPC call to evaluate. */
export interface GrpcRequestInput {
  /** Discriminates gRPC from HTTP requests. */
  readonly kind: "grpc";
  /** The `:authority`, possibly with a port. */
  readonly authority: string;
  /** The port the call was received on; see {@link HttpRequestInput.port}. */
  readonly port?: number;
  /** The scheme the caller used; defaults to `http`. */
  readonly scheme?: string;
  /** The fully-qualified gRPC service, for example `pkg.Echo`. */
  readonly service: string;
  /** The gRPC method, for example `Echo`. */
  readonly method: string;
  /** The request metadata. */
  readonly metadata?: HeaderInput;
}

/** A request of either kind. */
export type EvaluatorRequest = HttpRequestInput | GrpcRequestInput;

/**
 * The destination of a mesh (GAMMA) request: the Service frontend the caller
 * dialled and the caller's namespace, which decides whether consumer routes
 * apply.
 */
export interface MeshDestination {
  /** The destination Service, as `namespace/name`. */
  readonly service: string;
  /** The Service port the caller dialled. */
  readonly port: number;
  /** The name of that Service port, for parentRefs that use `sectionName`. */
  readonly portName?: string;
  /** The namespace of the calling workload. */
  readonly callerNamespace: string;
}

/** Everything the evaluator needs to decide one request. */
export interface EvaluateInput {
  /**
   * The projections whose routes may apply. In the mesh, the destination
   * service's projection(s); at a Gateway, a projection holding the routes
   * attached to the chosen listener, each with the hostnames of its own that
   * the listener keeps (those intersecting the listener's, as written: their
   * intersections with it would rank an `*.example.com` route like an exact
   * one on a `foo.example.com` listener). The caller has already matched the
   * request's host against the listener.
   */
  readonly projections: readonly ServiceConfigProjection[];
  /** The request. */
  readonly request: EvaluatorRequest;
  /**
   * Set for mesh (GAMMA) evaluation: routes must attach to this Service and
   * port through a parentRef, consumer routes of the caller's namespace
   * replace producer routes, route hostnames are ignored, and a request to a
   * service without routes goes to the service itself. Unset for Gateway
   * evaluation: every route applies and its hostnames must match the host.
   */
  readonly mesh?: MeshDestination;
  /**
   * The only source of randomness: returns a number in [0, 1). It is called
   * once to pick among several weighted backends, then once per mirror that
   * has a fraction, in that order. Defaults to `() => 0`.
   */
  readonly random?: () => number;
  /**
   * Whether a backend can receive traffic (for example, a cross-namespace
   * reference without a ReferenceGrant cannot). Requests routed to an
   * unresolvable backend get a 500 (GRPCRoute: 503, gRPC Unavailable).
   * Defaults to "the backend names a service".
   */
  readonly isBackendResolvable?: (backend: Backend, route: Route) => boolean;
  /**
   * The mesh-wide defaults that apply (the route table's winning MeshConfig,
   * local or imported); undefined: none. They decide nothing about where a
   * request goes: a forwarded request (or a mesh passthrough) reports the
   * request timeout and retry policy in effect, the rule's own first, and
   * the retry budget and outlier detection as information.
   */
  readonly meshDefaults?: MeshConfig | undefined;
}

/** What became of the request. */
export type DecisionOutcome =
  /** Forwarded to a backend of the matched rule. */
  | "forwarded"
  /** Mesh only: no route attaches to the destination, so it goes to the Service itself. */
  | "passthrough"
  /** Answered with a redirect (3xx). */
  | "redirected"
  /** Answered by the CORS filter (a preflight). */
  | "cors-preflight"
  /** No route matched: 404 (gRPC: Unimplemented). */
  | "no-route"
  /**
   * The matched rule has no backend that can take the request: 500 for an
   * HTTPRoute; 503, gRPC Unavailable, for a GRPCRoute (its spec's UNAVAILABLE).
   */
  | "no-backend"
  /**
   * A filter the request would run is an ExtensionRef the consumer could not
   * resolve (its `unresolved_reason`): 500 (gRPC: Unknown), never skipped.
   */
  | "unresolved-filter";

/** The route that decided a request. */
export interface DecisionRoute {
  /** The route object's kind. */
  readonly kind: "HTTPRoute" | "GRPCRoute";
  /** The route object's namespace. */
  readonly namespace: string;
  /** The route object's name. */
  readonly name: string;
  /** The origin cluster of the projection the route came from. */
  readonly originCluster: string;
  /** The service the projection is keyed by. */
  readonly projectionService: string;
  /** The route's GAMMA role. */
  readonly role: "producer" | "consumer" | "unspecified";
}

/** The backend a request was sent to (or that the rule picked and could not use). */
export interface DecisionBackend {
  /** The destination service, as `namespace/name`. */
  readonly service: string;
  /** The destination port. */
  readonly port: number;
  /** The backend's weight (1 for a mesh passthrough). */
  readonly weight: number;
  /** The backend's index in the rule's list; -1 for a mesh passthrough. */
  readonly index: number;
  /** The application protocol of the destination port, when declared. */
  readonly appProtocol: string;
}

/** A redirect answer. */
export interface DecisionRedirect {
  /** The status code (301, 302, 303, 307 or 308). */
  readonly statusCode: number;
  /** The full Location header value. */
  readonly location: string;
  /** The Location's scheme. */
  readonly scheme: string;
  /** The Location's host. */
  readonly hostname: string;
  /** The Location's port, or undefined when it is the scheme's well-known port and left out. */
  readonly port: number | undefined;
  /** The Location's path (without the query). */
  readonly path: string;
}

/** A mirror of the request. */
export interface DecisionMirror {
  /** The service that receives the copy, as `namespace/name`. */
  readonly service: string;
  /** The port of that service. */
  readonly port: number;
  /** The share of requests mirrored, in percent (100 when the filter has no fraction). */
  readonly percent: number;
  /** Whether this request is mirrored (decided with the injected random source). */
  readonly mirrored: boolean;
}

/** The CORS handling of a request whose rule has a CORS filter. */
export interface DecisionCors {
  /** The policy. */
  readonly policy: Cors;
  /** Whether the request was a CORS preflight (OPTIONS with Origin and Access-Control-Request-Method). */
  readonly preflight: boolean;
  /** The request's Origin, when it sent one. */
  readonly origin: string | undefined;
  /** Whether that origin is allowed by the policy. */
  readonly originAllowed: boolean;
}

/** Request and backend timeouts of the matched rule, in milliseconds (0 = disabled). */
export interface DecisionTimeouts {
  /** The whole request, when set. */
  readonly requestMs: number | undefined;
  /** One backend attempt, when set. */
  readonly backendRequestMs: number | undefined;
}

/**
 * The retry policy of the matched rule (HTTPRoute `rules[].retry`), times in
 * milliseconds. It says what the data plane does when the backend fails; it
 * decides nothing about where the request goes.
 */
export interface DecisionRetry {
  /** The status codes that are retried, ascending (connection errors are retried too). */
  readonly codes: readonly number[];
  /** The most retries of one request (0: none); undefined means the data plane's default. */
  readonly attempts: number | undefined;
  /** The least wait before a retry; undefined means the data plane's default. */
  readonly backoffMs: number | undefined;
}

/** Where a policy in effect comes from: the matched route rule, or the mesh defaults. */
export type PolicySource = "rule" | "mesh";

/** The request timeout in effect for a forwarded request. */
export interface DecisionRequestTimeout {
  /** The timeout of the whole request, in milliseconds (0 = disabled). */
  readonly ms: number;
  /** The rule's `timeouts.request`, or the mesh defaults' `request_timeout`. */
  readonly source: PolicySource;
}

/**
 * The mesh defaults' policies that are not a routing decision: what the data
 * plane does about retries and failing endpoints of the destination. Times
 * in milliseconds.
 */
export interface DecisionMeshPolicies {
  /** The retry budget, when the defaults set one. */
  readonly retryBudget:
    | { readonly percent: number; readonly minRetryConcurrency: number }
    | undefined;
  /** Outlier detection, when the defaults set it. */
  readonly outlierDetection:
    | {
        readonly consecutive5xxErrors: number;
        readonly intervalMs: number | undefined;
        readonly baseEjectionTimeMs: number | undefined;
        readonly maxEjectionPercent: number;
      }
    | undefined;
}

/**
 * The evaluator's answer for one request. It is explainable: it names the
 * route, rule and match that won, and lists every change made to the request.
 */
export interface Decision {
  /** What became of the request. */
  readonly outcome: DecisionOutcome;
  /**
   * The HTTP status the caller sees when the data plane answers (3xx, 204 or
   * 403 for preflights, 404, 500, 503), or 200 when the request is forwarded
   * (the backend's own status then applies).
   */
  readonly status: number;
  /**
   * For gRPC requests, the gRPC status name the caller sees (`OK`,
   * `Unimplemented`, `Unavailable`, `Unknown`...; see evaluator-status.ts).
   */
  readonly grpcStatus: string | undefined;
  /** A sentence explaining the decision. */
  readonly reason: string;
  /** The route that matched. */
  readonly route: DecisionRoute | undefined;
  /** The index of the matched rule in its route. */
  readonly ruleIndex: number | undefined;
  /** The matched rule's name, when it has one. */
  readonly ruleName: string | undefined;
  /** The index of the matched match in its rule; undefined when the rule has no matches. */
  readonly matchIndex: number | undefined;
  /** The matched match; undefined when the rule has no matches (it matches everything). */
  readonly match: RouteMatch | undefined;
  /** The route hostname that matched the request host; undefined when none was needed. */
  readonly hostname: string | undefined;
  /** How many (route, rule, match) candidates matched the request. */
  readonly matchedCandidates: number;
  /** The backend chosen (also set when an unresolvable one fails the request). */
  readonly backend: DecisionBackend | undefined;
  /** The request headers the backend receives (lower-case names). */
  readonly requestHeaders: HeaderMap;
  /** The request header operations applied, rule filters first, then backend filters. */
  readonly requestHeaderChanges: readonly HeaderChange[];
  /** The response header operations to apply to the backend's response, in order. */
  readonly responseHeaderChanges: readonly HeaderChange[];
  /** The path (with query) and Host the backend receives. */
  readonly forwarded: { readonly path: string; readonly host: string } | undefined;
  /** Set when a URLRewrite filter changed the path and/or host. */
  readonly rewrite: { readonly path: string; readonly host: string } | undefined;
  /** Set when the request is answered with a redirect. */
  readonly redirect: DecisionRedirect | undefined;
  /** The mirrors of the matched rule and backend. */
  readonly mirrors: readonly DecisionMirror[];
  /** The matched rule's timeouts, when it sets any. */
  readonly timeouts: DecisionTimeouts | undefined;
  /**
   * The request timeout in effect when the request is forwarded (or passes
   * through to the Service): the matched rule's `timeouts.request`, else the
   * mesh defaults'; undefined when neither sets one (the data plane's own).
   */
  readonly requestTimeout: DecisionRequestTimeout | undefined;
  /**
   * The retry policy in effect when the request is forwarded (or passes
   * through): the matched rule's own when it has one (it replaces the mesh
   * default whole, even empty), else the mesh defaults'; undefined otherwise
   * (an answer the data plane gives itself, a redirect, a preflight or a
   * 500, is never retried).
   */
  readonly retry: DecisionRetry | undefined;
  /** Where {@link Decision.retry} comes from; undefined when there is none. */
  readonly retrySource: PolicySource | undefined;
  /**
   * The mesh defaults' retry budget and outlier detection, when the request
   * is forwarded (or passes through) and the defaults set either; not a
   * routing decision.
   */
  readonly meshPolicies: DecisionMeshPolicies | undefined;
  /** The CORS handling, when the matched rule has a CORS filter. */
  readonly cors: DecisionCors | undefined;
  /**
   * Implementation-specific filters the data plane must run, in order (an
   * HTTPFilter reference the consumer resolved carries the filter's contents
   * in `httpFilter`; the first unresolved one ends the list and the request).
   */
  readonly extensionRefs: readonly ExtensionRef[];
}
