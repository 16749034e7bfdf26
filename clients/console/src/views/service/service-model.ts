/**
 * The Service view's model of a projection: a tree of labelled nodes,
 * HTTP routes and gRPC routes → rules → matches, filters, backends (each
 * with its weight's share of the rule, for the bar), timeouts and retry,
 * then the projection's other parts (`service-sections.ts`). Node ids are
 * paths (`route/0/rule/1/backend/0`) so that open branches stay open when a
 * new version of the projection arrives. Pure.
 */
import {
  type Backend,
  type Route,
  RouteKind,
  type RouteRule,
  type ServiceConfigProjection,
} from "../../../../../gen/aether/registry/v1/projection_pb.js";
import {
  backendName,
  filterLabel,
  matchConditions,
  parentName,
  percentLabel,
  retryLabel,
  sharePercent,
  timeoutsLabel,
} from "./service-labels.js";
import { otherSections } from "./service-sections.js";
import { leaf, section, type TreeNode } from "./tree-node.js";

/** The backends of a rule, each with its bar; zero weights say `weight 0 (no traffic)`. */
export function backendNodes(id: string, backends: readonly Backend[]): TreeNode[] {
  const total = backends.reduce((sum, b) => sum + b.weight, 0);
  return backends.map((backend, i) => {
    const percent = sharePercent(backend.weight, total);
    const bid = `${id}/backend/${i}`;
    const app = backend.appProtocol === "" ? "" : `app protocol ${backend.appProtocol}`;
    const weight = backend.weight === 0 ? "weight 0 (no traffic)" : `weight ${backend.weight}`;
    return {
      id: bid,
      kind: "backend" as const,
      label: backendName(backend),
      detail: [weight, app].filter((part) => part !== "").join(" · "),
      bar: { weight: backend.weight, percent, label: percentLabel(percent) },
      children: backend.filters.map((f, j) => leaf(`${bid}/filter/${j}`, "filter", filterLabel(f))),
    };
  });
}

/** `1 match`, `2 matches`. */
function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

function ruleNode(id: string, rule: RouteRule, index: number): TreeNode {
  const matches =
    rule.matches.length === 0
      ? [leaf(`${id}/match/any`, "match", "any request", "the rule has no matches")]
      : rule.matches.map((m, i) =>
          leaf(`${id}/match/${i}`, "match", matchConditions(m).join(" and ") || "any request"),
        );
  const filters = rule.filters.map((f, i) => leaf(`${id}/filter/${i}`, "filter", filterLabel(f)));
  const backends =
    rule.backends.length === 0
      ? [
          leaf(
            `${id}/backend/none`,
            "backend",
            "no backend",
            "requests are answered by a filter or fail",
          ),
        ]
      : backendNodes(id, rule.backends);
  const policies = [
    ["timeouts", timeoutsLabel(rule.timeouts)],
    ["retry", retryLabel(rule.retry)],
  ]
    .filter(([, text]) => text !== "")
    .map(([name, text]) => leaf(`${id}/${name}`, "policy", `${name}: ${text}`));
  const counts = `${count(rule.matches.length, "match", "matches")}, ${count(rule.backends.length, "backend", "backends")}`;
  return {
    id,
    kind: "rule",
    label: rule.name === "" ? `rule ${index}` : `rule ${index} "${rule.name}"`,
    detail: counts,
    children: [...matches, ...filters, ...backends, ...policies],
  };
}

function routeNode(route: Route, index: number): TreeNode {
  const id = `route/${index}`;
  const kind = route.kind === RouteKind.GRPC ? "GRPCRoute" : "HTTPRoute";
  const parents = route.parentRefs.map(parentName).join(", ") || "no parents";
  const hosts = route.hostnames.length === 0 ? "" : ` · hosts ${route.hostnames.join(", ")}`;
  return {
    id,
    kind: "route",
    label: `${kind} ${route.namespace}/${route.name}`,
    detail: `on ${parents}${hosts}`,
    children: route.rules.map((rule, i) => ruleNode(`${id}/rule/${i}`, rule, i)),
  };
}

/**
 * The tree of `projection`: a section of HTTP routes and one of gRPC routes
 * (each route → rules → matches, filters, backends with bars, timeouts,
 * retry), then its HTTP filters, backend TLS, VirtualHost names and mesh
 * config when it carries them. Empty sections are left out.
 */
export function projectionTree(projection: ServiceConfigProjection): TreeNode[] {
  const routes = projection.routes.map((route, i) => ({ route, node: routeNode(route, i) }));
  const of = (kind: RouteKind) =>
    routes.filter(({ route }) => (route.kind === RouteKind.GRPC) === (kind === RouteKind.GRPC));
  return [
    section(
      "http",
      "HTTP routes",
      of(RouteKind.HTTP).map(({ node }) => node),
    ),
    section(
      "grpc",
      "gRPC routes",
      of(RouteKind.GRPC).map(({ node }) => node),
    ),
    ...otherSections(projection),
  ].filter((node): node is TreeNode => node !== undefined);
}
