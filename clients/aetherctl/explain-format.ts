/**
 * The human-readable answer of `aetherctl explain`: what the shared evaluator
 * decided for a request, which origin's config decided it, and every part of
 * the decision (route, rule, match, backend and its weight share, header
 * changes, rewrite, redirect Location, mirrors, timeouts, retry policy, and
 * the backend TLS settings that apply to the chosen backend), the mesh
 * defaults that applied (marked `(mesh default)`, with the record they came
 * from), and the service's HTTP filters that run for the request, in order.
 * Pure.
 */
import type {
  BackendTls,
  HttpFilter,
  ServiceConfigProjection,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { describeRouteSource } from "../../services/common/agent-route-parse.js";
import type {
  Decision,
  DecisionRoute,
  HeaderChange,
} from "../../services/common/evaluator-types.js";
import { type AgentLookup, notRoutedSentence } from "./agent-routes.js";
import { describeBackendTls } from "./backend-tls-describe.js";
import type { ExplainTarget } from "./explain-request.js";
import { describeExtensionRef } from "./extension-ref-describe.js";
import { describeExtension, httpFilterHeading } from "./http-filter-describe.js";
import {
  describeRetryInEffect,
  type MeshDefaultsOrigin,
  meshDecisionFields,
} from "./mesh-defaults-describe.js";
import {
  backendAddress,
  describeMatch,
  formatPercent,
  routeKindName,
  weightShare,
} from "./projection-describe.js";
import { describeTimeouts, ruleHeading } from "./projection-tree.js";
import { formatFields } from "./table-format.js";

/** Everything `aetherctl explain` prints. */
export interface Explanation {
  /** What was evaluated. */
  readonly target: ExplainTarget;
  /** The projection the decision was made with; undefined when the service has none. */
  readonly projection: ServiceConfigProjection | undefined;
  /** Where the projection came from: `effective view` or `origin NAME`. */
  readonly view: string;
  /** The evaluator's decision. */
  readonly decision: Decision;
  /** The random source's description, for example `constant 0`. */
  readonly random: string;
  /** With `--agent`: the agent and its entry for the service (which then is `projection`). */
  readonly agent?: AgentLookup;
  /** The service's HTTP filters that run for the request's port, in run order (default none). */
  readonly httpFilters?: readonly HttpFilter[];
  /**
   * The backend TLS settings (BackendTLSPolicy) that apply to the chosen
   * backend, from its service's projection; undefined for plaintext, or when
   * no backend was chosen or its service has no projection here.
   */
  readonly backendTls?: BackendTls;
  /** The mesh record whose defaults the decision was made under, and where it was read. */
  readonly meshDefaults?: MeshDefaultsOrigin;
}

/** Describes the filters that run, in order: `1. shop/f (AuthZ, priority 0): ext_authz …; 2. …`. */
export function describeHttpFilters(filters: readonly HttpFilter[]): string {
  return filters
    .map((f, i) => `${i + 1}. ${httpFilterHeading(f)}: ${describeExtension(f)}`)
    .join("; ");
}

/** The sentence printed when the destination has no projection at all. */
export function noConfigSentence(service: string): string {
  return `no routing config for ${service}: requests go to the service itself`;
}

function sameRoute(route: DecisionRoute, projection: ServiceConfigProjection) {
  return projection.routes.find(
    (r) =>
      r.namespace === route.namespace &&
      r.name === route.name &&
      routeKindName(r.kind) === route.kind,
  );
}

function backendLine(decision: Decision, projection: ServiceConfigProjection | undefined): string {
  const backend = decision.backend;
  if (backend === undefined) return "";
  if (backend.index < 0) return `${backendAddress(backend)} (the service itself)`;
  const route = decision.route;
  const rule =
    route === undefined || projection === undefined
      ? undefined
      : sameRoute(route, projection)?.rules[decision.ruleIndex ?? -1];
  const chosen = rule?.backends[backend.index];
  const share =
    rule === undefined || chosen === undefined
      ? ""
      : `, ${formatPercent(weightShare(chosen, rule.backends))} of the rule's traffic`;
  return `${backendAddress(backend)} (backend ${backend.index}, weight ${backend.weight}${share})`;
}

/** Describes header operations: `set x-a: 1; remove x-b`. */
export function describeHeaderChanges(changes: readonly HeaderChange[]): string {
  return changes
    .map((c) => `${c.op} ${c.name}${c.op === "remove" ? "" : `: ${c.value}`}`)
    .join("; ");
}

function matchLine(decision: Decision): string {
  if (decision.ruleIndex === undefined) return "";
  if (decision.match === undefined || decision.matchIndex === undefined) {
    return "any request (the rule has no matches)";
  }
  return `${decision.matchIndex}: ${describeMatch(decision.match)}`;
}

function statusLine(decision: Decision): string {
  const grpc = decision.grpcStatus === undefined ? "" : ` (gRPC ${decision.grpcStatus})`;
  return `${decision.outcome}, status ${decision.status}${grpc}`;
}

function decidedBy(explanation: Explanation): string {
  const { projection, decision, agent } = explanation;
  if (agent !== undefined && agent.entry === undefined) {
    return notRoutedSentence(agent.url, explanation.target.service);
  }
  if (projection === undefined) return noConfigSentence(explanation.target.service);
  const origin = decision.route?.originCluster ?? projection.originCluster;
  return `origin ${origin}, version ${projection.version} (${explanation.view})`;
}

/**
 * Formats an explanation as aligned `label: value` lines. Lines whose value
 * is empty (no rewrite, no mirrors, …) are left out. Returns the text with a
 * final `\n`.
 */
export function formatExplanation(explanation: Explanation): string {
  const { target, decision, projection } = explanation;
  const route = decision.route;
  const lines: [string, string][] = [
    ["request", `${target.summary} from namespace ${target.callerNamespace}`],
    [
      "service",
      `${target.service} port ${target.port}${target.portName === undefined ? "" : ` (${target.portName})`}`,
    ],
    [
      "virtual host",
      target.virtualHost === undefined
        ? ""
        : `${target.virtualHostName ?? ""} matches ${target.virtualHost.hostname} (VirtualHost ${target.virtualHost.virtualHost})`,
    ],
    ["decision", statusLine(decision)],
    ["decided by", decidedBy(explanation)],
    ["http filters", describeHttpFilters(explanation.httpFilters ?? [])],
    [
      "source",
      explanation.agent?.entry === undefined ? "" : describeRouteSource(explanation.agent.entry),
    ],
    [
      "route",
      route === undefined ? "" : `${route.kind} ${route.namespace}/${route.name} (${route.role})`,
    ],
    [
      "rule",
      decision.ruleIndex === undefined
        ? ""
        : ruleHeading(decision.ruleIndex, decision.ruleName ?? "").replace(/^rule /, ""),
    ],
    ["match", matchLine(decision)],
    ["backend", backendLine(decision, projection)],
    [
      "backend tls",
      explanation.backendTls === undefined ? "" : describeBackendTls(explanation.backendTls),
    ],
    ["headers", describeHeaderChanges(decision.requestHeaderChanges)],
    [
      "rewrite",
      decision.rewrite === undefined
        ? ""
        : `path ${decision.rewrite.path}, host ${decision.rewrite.host}`,
    ],
    [
      "redirect",
      decision.redirect === undefined
        ? ""
        : `${decision.redirect.statusCode} Location: ${decision.redirect.location}`,
    ],
    [
      "mirrors",
      decision.mirrors
        .map(
          (m) =>
            `${backendAddress(m)} ${formatPercent(m.percent)} (${m.mirrored ? "this request is mirrored" : "this request is not mirrored"})`,
        )
        .join("; "),
    ],
    ["timeouts", describeTimeouts(decision.timeouts)],
    ["retry", describeRetryInEffect(decision)],
    ...meshDecisionFields(decision, explanation.meshDefaults),
    ["response headers", describeHeaderChanges(decision.responseHeaderChanges)],
    [
      "cors",
      decision.cors === undefined
        ? ""
        : `${decision.cors.preflight ? "preflight" : "request"} from origin ${decision.cors.origin ?? "(none)"}: ${decision.cors.originAllowed ? "allowed" : "not allowed"}`,
    ],
    ["extensions", decision.extensionRefs.map(describeExtensionRef).join("; ")],
    ["reason", decision.reason],
    ["random", `${explanation.random} (choose with --random X or --seed-random N)`],
  ];
  return formatFields(lines.filter(([, value]) => value !== ""));
}
