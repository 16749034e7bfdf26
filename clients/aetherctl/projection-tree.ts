/**
 * The human-readable form of one projection for `aetherctl get`: a short
 * header (service, origin, signer, version and age) and an indented tree of routes,
 * rules, matches, filters, backends, timeouts and retry policies, then the
 * service's HTTP filters in run order, then its backend TLS settings
 * (BackendTLSPolicy); its VirtualHost names are a header line. Pure.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import {
  type HttpFilter,
  type Route,
  RouteKind,
  type RouteRule,
  type ServiceConfigProjection,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { retryOf, timeoutsOf } from "../../services/common/evaluator-filters.js";
import type { DecisionRetry, DecisionTimeouts } from "../../services/common/evaluator-types.js";
import { backendTlsLines } from "./backend-tls-describe.js";
import { describeExtension, httpFilterHeading } from "./http-filter-describe.js";
import {
  describeBackend,
  describeFilter,
  describeMatch,
  describeParentRef,
  routeKindName,
  routeRoleName,
} from "./projection-describe.js";
import { describeSignature, type SignatureReport } from "./signature-report.js";
import { formatFields } from "./table-format.js";
import { formatAge, formatMillis } from "./time-format.js";
import { describeVirtualHosts } from "./virtual-host-describe.js";

const STEP = "  ";

/** Describes a rule's timeouts: `request 10s, backend request 2.5s`; empty when none is set. */
export function describeTimeouts(timeouts: DecisionTimeouts | undefined): string {
  if (timeouts === undefined) return "";
  return [
    timeouts.requestMs === undefined ? "" : `request ${formatMillis(timeouts.requestMs)}`,
    timeouts.backendRequestMs === undefined
      ? ""
      : `backend request ${formatMillis(timeouts.backendRequestMs)}`,
  ]
    .filter((part) => part !== "")
    .join(", ");
}

/**
 * Describes a retry policy: `on 500, 503 and connection errors, at most 3
 * retries, backoff 100ms`; `off (attempts 0)`; what the policy leaves unset
 * is the data plane's `default`. Empty when there is no policy.
 */
export function describeRetry(retry: DecisionRetry | undefined): string {
  if (retry === undefined) return "";
  if (retry.attempts === 0) return "off (attempts 0)";
  const codes = retry.codes.length === 0 ? "" : `${retry.codes.join(", ")} and `;
  const attempts =
    retry.attempts === undefined
      ? "default attempts"
      : `at most ${retry.attempts} ${retry.attempts === 1 ? "retry" : "retries"}`;
  const backoff =
    retry.backoffMs === undefined ? "default backoff" : `backoff ${formatMillis(retry.backoffMs)}`;
  return `on ${codes}connection errors, ${attempts}, ${backoff}`;
}

/** The heading of a rule: `rule 0`, or `rule 0 "beta-testers"` when it has a name. */
export function ruleHeading(index: number, name: string): string {
  return name === "" ? `rule ${index}` : `rule ${index} ${JSON.stringify(name)}`;
}

/** What the data plane answers a request that a rule without backends matches. */
function noBackendAnswer(rule: RouteRule, kind: RouteKind): string {
  if (rule.filters.some((f) => f.filter.case === "requestRedirect")) return "the redirect answers";
  return kind === RouteKind.GRPC ? "calls get UNAVAILABLE" : "requests get a 500";
}

function ruleLines(rule: RouteRule, kind: RouteKind, index: number, indent: string): string[] {
  const inner = indent + STEP;
  const lines = [`${indent}${ruleHeading(index, rule.name)}`];
  if (rule.matches.length === 0) lines.push(`${inner}match: any request (the rule has no matches)`);
  rule.matches.forEach((match, i) => {
    lines.push(`${inner}match ${i}: ${describeMatch(match)}`);
  });
  for (const filter of rule.filters) lines.push(`${inner}filter: ${describeFilter(filter)}`);
  if (rule.backends.length === 0)
    lines.push(`${inner}backend: none (${noBackendAnswer(rule, kind)})`);
  for (const backend of rule.backends) {
    lines.push(`${inner}backend: ${describeBackend(backend, rule.backends)}`);
    for (const filter of backend.filters) {
      lines.push(`${inner}${STEP}filter: ${describeFilter(filter)}`);
    }
  }
  const timeouts = describeTimeouts(timeoutsOf(rule.timeouts));
  if (timeouts !== "") lines.push(`${inner}timeouts: ${timeouts}`);
  const retry = describeRetry(retryOf(rule.retry));
  if (retry !== "") lines.push(`${inner}retry: ${retry}`);
  return lines;
}

function routeLines(route: Route): string[] {
  const created =
    route.creationTime === undefined
      ? ""
      : `, created ${timestampDate(route.creationTime).toISOString().replace(".000Z", "Z")}`;
  const lines = [
    `${routeKindName(route.kind)} ${route.namespace}/${route.name} (${routeRoleName(route.role)}${created})`,
    `${STEP}parents: ${route.parentRefs.map(describeParentRef).join(", ") || "(none)"}`,
  ];
  if (route.hostnames.length > 0) lines.push(`${STEP}hostnames: ${route.hostnames.join(", ")}`);
  route.rules.forEach((rule, index) => {
    lines.push(...ruleLines(rule, route.kind, index, STEP));
  });
  return lines;
}

/** The HTTP filters section: a heading, then each filter with its targets and extension. */
function filterLines(filters: readonly HttpFilter[]): string[] {
  const lines = ["HTTP filters, in run order"];
  filters.forEach((filter, i) => {
    const created =
      filter.creationTime === undefined
        ? ""
        : ` created ${timestampDate(filter.creationTime).toISOString().replace(".000Z", "Z")}`;
    lines.push(`${STEP}${i + 1}. HTTPFilter ${httpFilterHeading(filter)}${created}`);
    lines.push(`${STEP}${STEP}targets: ${filter.targets.map(describeParentRef).join(", ")}`);
    lines.push(`${STEP}${STEP}runs: ${describeExtension(filter)}`);
  });
  return lines;
}

/**
 * Formats a projection as a header and a tree of its routes (then its HTTP
 * filters and its backend TLS settings, when it has any), for example:
 *
 * ```text
 * service:  shop/checkout
 * origin:   dev
 * signed:   key 5f0c6e2b9a1d3c47 of dev (ed25519): verified
 * version:  2026-11-29T12:00:00.000000000Z (age 3d)
 * routes:   1
 *
 * HTTPRoute shop/checkout-canary (producer, created 2026-11-01T09:00:00Z)
 *   parents: shop/checkout:8080
 *   rule 0 "beta-testers"
 *     match 0: path prefix /cart, header x-beta = "true"
 *     backend: shop/checkout-v2:8080 weight 1 (100%)
 * ```
 *
 * `nowMs` is the current time, for the age; `signature` is what
 * `signature-report.ts` found about its signature. Returns the text with a
 * final `\n`.
 */
export function formatProjectionTree(
  projection: ServiceConfigProjection,
  nowMs: number,
  signature: SignatureReport,
): string {
  const fields: [string, string][] = [
    ["service", projection.service],
    ["origin", projection.originCluster],
    ["signed", describeSignature(signature, projection.originCluster)],
    ["version", `${projection.version} (age ${formatAge(projection.version, nowMs)})`],
    ["routes", String(projection.routes.length)],
  ];
  if (projection.httpFilters.length > 0) {
    fields.push(["filters", String(projection.httpFilters.length)]);
  }
  const virtualHosts = describeVirtualHosts(projection);
  if (virtualHosts !== "") fields.push(["virtual hosts", virtualHosts]);
  if (projection.backendTls.length > 0) {
    fields.push(["backend tls", String(projection.backendTls.length)]);
  }
  const header = formatFields(fields);
  const blocks = projection.routes.map((route) => routeLines(route).join("\n"));
  if (projection.httpFilters.length > 0)
    blocks.push(filterLines(projection.httpFilters).join("\n"));
  const tls = backendTlsLines(projection);
  if (tls.length > 0) blocks.push(tls.join("\n"));
  const body = blocks.join("\n\n");
  return body === "" ? header : `${header}\n${body}\n`;
}
