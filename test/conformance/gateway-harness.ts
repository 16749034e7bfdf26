/**
 * The gateway-profile harness: enough of a Gateway to run the corpus's
 * north/south cases through the evaluator. It selects the listener (port,
 * protocol, hostname specificity; SNI plus the 421/404 Host checks for
 * HTTPS), attaches routes to it (parentRef name, namespace, sectionName and
 * port; allowedRoutes namespaces and kinds; hostname intersection), projects
 * each attached route with `projectRoute`, and evaluates the request against
 * them. The routes keep their own hostnames (those that intersect the
 * listener's), so that precedence between them goes by what each specifies.
 * Requests with no Host use the Gateway's address.
 */
import { create } from "@bufbuild/protobuf";
import {
  type Route,
  RouteSchema,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import {
  type EvaluatorRequest,
  evaluate,
  hostnameMatches,
  hostWithoutPort,
} from "../../services/common/evaluator.js";
import {
  apiGroupOf,
  GATEWAY_API_GROUP,
  type KubeObject,
} from "../../services/common/kube-object.js";
import { createObjectIndex, projectRoute } from "../../services/common/projector.js";
import type { GatewayRequest } from "./corpus.js";
import type { Runner } from "./expectations.js";
import { type Observed, observeAnswer, observeDecision } from "./observed.js";

/** The address a Gateway answers on, used as the Host when a case sends none. */
export const GATEWAY_ADDRESS = "192.0.2.10";

/** A Gateway listener, as the harness reads it. */
export interface Listener {
  /** The listener's name (what a parentRef's sectionName names). */
  readonly name: string;
  /** The port it listens on. */
  readonly port: number;
  /** `HTTP`, `HTTPS`, `TLS`, `TCP` or `UDP`. */
  readonly protocol: string;
  /** The hostname it accepts (exact or `*.` wildcard); undefined accepts any. */
  readonly hostname: string | undefined;
  /** Which routes may attach: namespaces (`Same`, `All`, `Selector`) and kinds. */
  readonly allowedRoutes: {
    readonly namespaces?: { readonly from?: string; readonly selector?: LabelSelector };
    readonly kinds?: readonly { readonly group?: string; readonly kind: string }[];
  };
}

interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly {
    readonly key: string;
    readonly operator: string;
    readonly values?: readonly string[];
  }[];
}

interface ParentRef {
  readonly group?: string;
  readonly kind?: string;
  readonly namespace?: string;
  readonly name: string;
  readonly sectionName?: string;
  readonly port?: number;
}

const ROUTE_KINDS = ["HTTPRoute", "GRPCRoute"];

/** Reports whether labels satisfy a Kubernetes label selector (matchLabels and matchExpressions). */
export function selectorMatches(
  selector: LabelSelector,
  labels: Readonly<Record<string, string>>,
): boolean {
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return (
    byLabel &&
    (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
      const value = labels[key];
      switch (operator) {
        case "In":
          return value !== undefined && values.includes(value);
        case "NotIn":
          return value === undefined || !values.includes(value);
        case "Exists":
          return value !== undefined;
        case "DoesNotExist":
          return value === undefined;
        default:
          return false;
      }
    })
  );
}

/**
 * The specificity of a listener hostname for a host, larger first, or
 * undefined when it does not match: exact names beat wildcards, wildcards
 * with more labels beat fewer, and any of them beats no hostname.
 */
function listenerRank(hostname: string | undefined, host: string): [number, number] | undefined {
  if (hostname === undefined || hostname === "") return [0, 0];
  if (!hostnameMatches(hostname, host)) return undefined;
  return hostname.startsWith("*.") ? [1, hostname.split(".").length] : [2, hostname.length];
}

/** Picks the most specific listener whose hostname matches `host`. */
export function selectListener(listeners: readonly Listener[], host: string): Listener | undefined {
  let best: { listener: Listener; rank: [number, number] } | undefined;
  for (const listener of listeners) {
    const rank = listenerRank(listener.hostname, host);
    if (rank === undefined) continue;
    if (
      best === undefined ||
      rank[0] > best.rank[0] ||
      (rank[0] === best.rank[0] && rank[1] > best.rank[1])
    ) {
      best = { listener, rank };
    }
  }
  return best?.listener;
}

/**
 * Reports whether two hostnames (exact, or `*.` wildcards matching one or
 * more labels) accept a common host: equal names; a wildcard and a name it
 * matches; two wildcards of which one's suffix ends with the other's.
 */
export function hostnamesIntersect(a: string, b: string): boolean {
  const wildA = a.startsWith("*.");
  const wildB = b.startsWith("*.");
  if (wildA && wildB) return a.slice(1).endsWith(b.slice(1)) || b.slice(1).endsWith(a.slice(1));
  if (wildA) return hostnameMatches(a, b);
  if (wildB) return hostnameMatches(b, a);
  return a === b;
}

/**
 * The route's own hostnames that a listener keeps: those that intersect the
 * listener's hostname (all of them when the listener has none), or undefined
 * when both are set and none intersects (the route does not attach). An
 * empty list means the route specifies none and accepts any host the
 * listener does.
 *
 * They are the route's hostnames as written, not their intersections with
 * the listener's: a request reaches this listener only when its host
 * matches the listener's hostname, so matching one of them is matching the
 * intersection, and precedence between routes on the listener goes by the
 * hostnames the routes specify (an exact `foo.example.com` beats
 * `*.example.com` even on a listener for `foo.example.com`, where both
 * intersect to the same name).
 */
export function routeHostnamesOnListener(
  listener: string | undefined,
  route: readonly string[],
): string[] | undefined {
  if (listener === undefined || listener === "" || route.length === 0) return [...route];
  const kept = route.filter((hostname) => hostnamesIntersect(listener, hostname));
  return kept.length === 0 ? undefined : kept;
}

function gatewayOf(objects: readonly KubeObject[], namespace: string, name: string): KubeObject {
  const gateway = objects.find(
    (o) =>
      o.kind === "Gateway" &&
      apiGroupOf(o.apiVersion) === GATEWAY_API_GROUP &&
      o.metadata?.namespace === namespace &&
      o.metadata?.name === name,
  );
  if (gateway === undefined) throw new Error(`no Gateway ${namespace}/${name} in the objects`);
  return gateway;
}

function namespaceAllowed(
  listener: Listener,
  gatewayNamespace: string,
  routeNamespace: string,
  objects: readonly KubeObject[],
): boolean {
  const from = listener.allowedRoutes.namespaces?.from ?? "Same";
  if (from === "All") return true;
  if (from === "Same") return routeNamespace === gatewayNamespace;
  if (from !== "Selector") return false;
  const namespace = objects.find(
    (o) => o.kind === "Namespace" && o.metadata?.name === routeNamespace,
  );
  const selector = listener.allowedRoutes.namespaces?.selector ?? {};
  return namespace !== undefined && selectorMatches(selector, namespace.metadata?.labels ?? {});
}

function kindAllowed(listener: Listener, route: KubeObject): boolean {
  const kinds = listener.allowedRoutes.kinds;
  if (kinds === undefined || kinds.length === 0) return ROUTE_KINDS.includes(route.kind ?? "");
  return kinds.some(
    (k) => k.kind === route.kind && (k.group ?? GATEWAY_API_GROUP) === apiGroupOf(route.apiVersion),
  );
}

function parentRefsOf(route: KubeObject): readonly ParentRef[] {
  return (route.spec as { parentRefs?: ParentRef[] } | undefined)?.parentRefs ?? [];
}

/**
 * Reports whether a route attaches to a listener of a Gateway: a parentRef
 * names the Gateway (group and kind default to the Gateway API's, namespace
 * to the route's), its sectionName and port (when set) name the listener,
 * and the listener allows the route's namespace and kind.
 */
export function attachesToListener(
  route: KubeObject,
  gateway: KubeObject,
  listener: Listener,
  objects: readonly KubeObject[],
): boolean {
  const routeNamespace = route.metadata?.namespace ?? "";
  const gatewayNamespace = gateway.metadata?.namespace ?? "";
  const named = parentRefsOf(route).some(
    (ref) =>
      (ref.group ?? GATEWAY_API_GROUP) === GATEWAY_API_GROUP &&
      (ref.kind ?? "Gateway") === "Gateway" &&
      (ref.namespace ?? routeNamespace) === gatewayNamespace &&
      ref.name === gateway.metadata?.name &&
      (ref.sectionName === undefined || ref.sectionName === listener.name) &&
      (ref.port === undefined || ref.port === listener.port),
  );
  return (
    named &&
    namespaceAllowed(listener, gatewayNamespace, routeNamespace, objects) &&
    kindAllowed(listener, route)
  );
}

/**
 * The routes attached to a listener, projected with `projectRoute` and
 * carrying the hostnames of their own that the listener keeps
 * ({@link routeHostnamesOnListener}). Routes the projector rejects are not
 * attached.
 */
export function attachedRoutes(
  objects: readonly KubeObject[],
  gateway: KubeObject,
  listener: Listener,
): { routes: Route[]; notes: string[] } {
  const index = createObjectIndex(objects);
  const routes: Route[] = [];
  const notes: string[] = [];
  for (const object of objects) {
    if (
      !ROUTE_KINDS.includes(object.kind ?? "") ||
      apiGroupOf(object.apiVersion) !== GATEWAY_API_GROUP
    ) {
      continue;
    }
    if (!attachesToListener(object, gateway, listener, objects)) continue;
    const hostnames = routeHostnamesOnListener(
      listener.hostname,
      (object.spec as { hostnames?: string[] } | undefined)?.hostnames ?? [],
    );
    const id = `${object.kind} ${object.metadata?.namespace}/${object.metadata?.name}`;
    if (hostnames === undefined) {
      notes.push(`${id}: no hostname intersects listener ${listener.name}`);
      continue;
    }
    const projected = projectRoute(object, index);
    if ("rejection" in projected) {
      notes.push(`${id} rejected: ${projected.rejection.reason}: ${projected.rejection.message}`);
      continue;
    }
    for (const warning of projected.warnings)
      notes.push(`${id}: ${warning.reason}: ${warning.message}`);
    routes.push(create(RouteSchema, { ...projected.route, hostnames }));
  }
  return { routes, notes };
}

function listenersOf(gateway: KubeObject): Listener[] {
  return ((gateway.spec as { listeners?: Listener[] } | undefined)?.listeners ?? []).map((l) => ({
    ...l,
    hostname: l.hostname ?? undefined,
    allowedRoutes: l.allowedRoutes ?? {},
  }));
}

/** Builds the runner of a gateway-profile request against an object set. */
export function gatewayRunner(objects: readonly KubeObject[], request: GatewayRequest): Runner {
  const gateway = gatewayOf(objects, request.gateway.namespace, request.gateway.name);
  const grpc = request.grpc !== undefined;
  const protocol = request.scheme === "https" ? "HTTPS" : "HTTP";
  const onPort = listenersOf(gateway).filter(
    (l) => l.port === request.port && l.protocol === protocol,
  );
  const defaultPort = request.scheme === "https" ? 443 : 80;
  const address =
    request.port === defaultPort ? GATEWAY_ADDRESS : `${GATEWAY_ADDRESS}:${request.port}`;
  const authority = (grpc ? request.authority : request.host) ?? address;
  const host = hostWithoutPort(authority);

  const listener = selectListener(onPort, host);
  const answer = (status: number, reason: string): Runner => {
    const observed = observeAnswer(status, grpc, reason);
    return () => observed;
  };
  if (listener === undefined)
    return answer(404, `no ${protocol} listener on port ${request.port} matches ${host}`);
  if (protocol === "HTTPS") {
    const bySni = selectListener(onPort, hostWithoutPort(request.sni ?? host));
    if (bySni === undefined) return answer(404, `no listener accepts SNI ${request.sni}`);
    if (bySni !== listener) {
      return answer(
        421,
        `SNI ${request.sni} chose listener ${bySni.name}, Host ${host} belongs to ${listener.name}`,
      );
    }
  }

  const { routes, notes } = attachedRoutes(objects, gateway, listener);
  const projection = create(ServiceConfigProjectionSchema, {
    service: `${gateway.metadata?.namespace}/${gateway.metadata?.name}`,
    originCluster: "",
    routes,
  });
  const evaluatorRequest: EvaluatorRequest = grpc
    ? {
        kind: "grpc",
        authority,
        port: request.port,
        scheme: request.scheme,
        service: request.grpc?.service ?? "",
        method: request.grpc?.method ?? "",
        metadata: request.metadata,
      }
    : {
        kind: "http",
        method: request.method ?? "GET",
        scheme: request.scheme,
        host: authority,
        port: request.port,
        path: request.path ?? "/",
        headers: request.headers,
      };
  return (random): Observed => {
    const decision = evaluate({ projections: [projection], request: evaluatorRequest, random });
    const observed = observeDecision(decision, objects, request.backendResponseHeaders);
    return notes.length === 0
      ? observed
      : {
          ...observed,
          reason: `${observed.reason} [listener ${listener.name}; ${notes.join("; ")}]`,
        };
  };
}
