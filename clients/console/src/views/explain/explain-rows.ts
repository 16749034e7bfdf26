/**
 * An explained request as the Explain view shows it, pure: the decision's
 * rows (outcome and status, the route, rule and match that decided it, the
 * backend, what was done to the request in order, redirect, timeouts and
 * retries with where they come from), and the matched rule's weighted
 * backends as shares, the chosen one marked.
 */
import {
  PathMatchType,
  RouteKind,
  type RouteMatch,
  type RouteRule,
  StringMatchType,
} from "../../../../../gen/aether/registry/v1/projection_pb.js";
import type { Decision, PolicySource } from "../../../../../services/common/evaluator-types.js";
import type { Explanation } from "../../../../../services/common/explain-decide.js";

/** One row of the decision: a stable key (for tests and links), a label and its value lines. */
export interface DecisionRow {
  readonly key: string;
  readonly label: string;
  /** One or more lines (filters in order are one line each). */
  readonly lines: readonly string[];
  /** The rows that made the decision (route, rule, match, backend) are highlighted. */
  readonly highlight: boolean;
}

/** One backend of the matched rule with its share of the traffic. */
export interface WeightedChoice {
  /** `namespace/name:port`. */
  readonly address: string;
  readonly weight: number;
  /** Its share of the rule's traffic, in percent (0 when every weight is 0). */
  readonly percent: number;
  /** Whether the pick chose it for this request. */
  readonly chosen: boolean;
}

const KIND: Record<string, RouteKind> = { HTTPRoute: RouteKind.HTTP, GRPCRoute: RouteKind.GRPC };

/** The matched rule in the destination's projection; undefined when no rule matched. */
export function matchedRule(explanation: Explanation): RouteRule | undefined {
  const { decision, projection } = explanation;
  const route = decision.route;
  if (route === undefined || projection === undefined || decision.ruleIndex === undefined) {
    return undefined;
  }
  const found = projection.routes.find(
    (r) => r.namespace === route.namespace && r.name === route.name && r.kind === KIND[route.kind],
  );
  return found?.rules[decision.ruleIndex];
}

/** The matched rule's backends with their shares; empty without a rule or for a passthrough. */
export function weightedChoices(explanation: Explanation): WeightedChoice[] {
  const rule = matchedRule(explanation);
  if (rule === undefined) return [];
  const total = rule.backends.reduce((sum, b) => sum + b.weight, 0);
  const chosen = explanation.decision.backend?.index;
  return rule.backends.map((backend, index) => ({
    address: `${backend.service === "" ? "(unresolved)" : backend.service}:${backend.port}`,
    weight: backend.weight,
    percent: total === 0 ? 0 : (backend.weight / total) * 100,
    chosen: index === chosen,
  }));
}

/** `90%`, `33.3%`. */
export function percentText(percent: number): string {
  return `${Number(percent.toFixed(1))}%`;
}

const PATH_WORD: Partial<Record<PathMatchType, string>> = {
  [PathMatchType.EXACT]: "path =",
  [PathMatchType.PATH_PREFIX]: "path prefix",
  [PathMatchType.REGULAR_EXPRESSION]: "path ~",
};

function condition(type: StringMatchType, name: string, value: string): string {
  return `${name} ${type === StringMatchType.REGULAR_EXPRESSION ? "~" : "="} ${JSON.stringify(value)}`;
}

/** A match's conditions in one line (`path prefix /cart, header x-beta = "true"`). */
export function matchText(match: RouteMatch): string {
  const parts = [
    match.path === undefined ? "" : `${PATH_WORD[match.path.type] ?? "path ?"} ${match.path.value}`,
    match.method === "" ? "" : `method ${match.method}`,
    ...match.headers.map((h) => `header ${condition(h.type, h.name, h.value)}`),
    ...match.queryParams.map((q) => `query ${condition(q.type, q.name, q.value)}`),
    match.grpcMethod === undefined
      ? ""
      : `grpc ${match.grpcMethod.service || "*"}/${match.grpcMethod.method || "*"}`,
  ].filter((part) => part !== "");
  return parts.length === 0 ? "any request" : parts.join(", ");
}

function sourceText(source: PolicySource | undefined): string {
  return source === "mesh" ? "from the mesh defaults" : "from the rule";
}

/** What was done to the request, in the order the data plane does it. */
function appliedLines(explanation: Explanation): string[] {
  const d = explanation.decision;
  return [
    ...explanation.httpFilters.map((f) => `HTTP filter ${f.namespace}/${f.name}`),
    ...d.requestHeaderChanges.map(
      (c) => `request header ${c.op} ${c.name}${c.op === "remove" ? "" : `: ${c.value}`}`,
    ),
    ...(d.rewrite === undefined ? [] : [`rewrite to ${d.rewrite.host}${d.rewrite.path}`]),
    ...d.mirrors.map(
      (m) =>
        `mirror to ${m.service}:${m.port} (${percentText(m.percent)}, ${m.mirrored ? "this request" : "not this request"})`,
    ),
    ...d.extensionRefs.map((ref) => `extension ${ref.group}/${ref.kind} ${ref.name}`),
    ...d.responseHeaderChanges.map(
      (c) => `response header ${c.op} ${c.name}${c.op === "remove" ? "" : `: ${c.value}`}`,
    ),
  ];
}

function statusText(d: Decision): string {
  return `${d.status}${d.grpcStatus === undefined ? "" : ` (gRPC ${d.grpcStatus})`}`;
}

function matchLine(d: Decision): string {
  if (d.ruleIndex === undefined) return "";
  if (d.match === undefined || d.matchIndex === undefined) {
    return "any request (the rule has no matches)";
  }
  return `#${d.matchIndex}: ${matchText(d.match)}`;
}

function backendLine(d: Decision, choices: readonly WeightedChoice[]): string {
  const b = d.backend;
  if (b === undefined) return "";
  if (b.index < 0) return `${b.service}:${b.port} (the service itself)`;
  const share = choices[b.index];
  return `${b.service === "" ? "(unresolved)" : b.service}:${b.port} (backend #${b.index}, weight ${b.weight}${share === undefined ? "" : `, ${percentText(share.percent)}`})`;
}

/**
 * The rows of an explanation, in reading order; rows with nothing to say
 * (no redirect, no retry, …) are left out.
 */
export function decisionRows(explanation: Explanation): DecisionRow[] {
  const d = explanation.decision;
  const { target, projection, meshRecord } = explanation;
  const route = d.route;
  const rows: [string, string, string | string[], boolean][] = [
    ["outcome", "Outcome", d.outcome, true],
    ["status", "Status", statusText(d), false],
    ["reason", "Why", d.reason, false],
    ["service", "Service", `${target.service} port ${target.port}`, false],
    [
      "virtual-host",
      "Virtual host",
      target.virtualHost === undefined
        ? ""
        : `${target.virtualHostName ?? ""} matches ${target.virtualHost.hostname} (VirtualHost ${target.virtualHost.virtualHost})`,
      false,
    ],
    [
      "config",
      "Config",
      projection === undefined
        ? `no routing config for ${target.service}: requests go to the service itself`
        : `origin ${projection.originCluster}, version ${projection.version}`,
      false,
    ],
    [
      "route",
      "Route",
      route === undefined ? "" : `${route.kind} ${route.namespace}/${route.name} (${route.role})`,
      true,
    ],
    [
      "rule",
      "Rule",
      d.ruleIndex === undefined ? "" : `#${d.ruleIndex}${d.ruleName ? ` (${d.ruleName})` : ""}`,
      true,
    ],
    ["match", "Match", matchLine(d), true],
    ["backend", "Backend", backendLine(d, weightedChoices(explanation)), true],
    [
      "redirect",
      "Redirect",
      d.redirect === undefined ? "" : `${d.redirect.statusCode} Location: ${d.redirect.location}`,
      true,
    ],
    ["applied", "Applied, in order", appliedLines(explanation), false],
    [
      "timeout",
      "Request timeout",
      d.requestTimeout === undefined
        ? ""
        : `${d.requestTimeout.ms === 0 ? "disabled" : `${d.requestTimeout.ms} ms`} ${sourceText(d.requestTimeout.source)}`,
      false,
    ],
    [
      "retry",
      "Retry",
      d.retry === undefined
        ? ""
        : `${d.retry.attempts ?? "default"} attempts on ${d.retry.codes.join(",") || "connection errors"}${d.retry.backoffMs === undefined ? "" : `, backoff ${d.retry.backoffMs} ms`} ${sourceText(d.retrySource)}`,
      false,
    ],
    [
      "backend-tls",
      "Backend TLS",
      explanation.backendTls === undefined ? "" : `to ${explanation.backendTls.hostname}`,
      false,
    ],
    [
      "mesh-defaults",
      "Mesh defaults",
      meshRecord === undefined
        ? ""
        : `@mesh from origin ${meshRecord.originCluster}, version ${meshRecord.version}`,
      false,
    ],
  ];
  return rows
    .map(([key, label, value, highlight]) => ({
      key,
      label,
      lines: (Array.isArray(value) ? value : [value]).filter((line) => line !== ""),
      highlight,
    }))
    .filter((row) => row.lines.length > 0);
}
