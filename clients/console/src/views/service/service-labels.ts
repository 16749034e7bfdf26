/**
 * The words of the Service view's tree: one short label for each part of a
 * projection (a match's conditions, a filter, a backend's address, a rule's
 * timeouts and retry policy, a duration). The console's own wording, kept
 * close to what `aetherctl get` prints. Pure.
 */
import type { Duration } from "@bufbuild/protobuf/wkt";
import {
  type Filter,
  type HeaderModifier,
  type ParentRef,
  PathMatchType,
  type PathModifier,
  PathModifierType,
  type RouteMatch,
  type RouteRetry,
  type RouteTimeouts,
  StringMatchType,
} from "../../../../../gen/aether/registry/v1/projection_pb.js";
import { durationMs } from "../../../../../services/common/evaluator-filters.js";

const PATH_OPS: Readonly<Record<number, string>> = {
  [PathMatchType.EXACT]: "=",
  [PathMatchType.PATH_PREFIX]: "starts with",
  [PathMatchType.REGULAR_EXPRESSION]: "~",
};

/** `=` for an exact string match, `~` for a regular expression, `?` otherwise. */
function stringOp(type: StringMatchType): string {
  if (type === StringMatchType.EXACT) return "=";
  return type === StringMatchType.REGULAR_EXPRESSION ? "~" : "?";
}

/**
 * The conditions of a match, one string each: `path starts with /cart`,
 * `method GET`, `header x-beta = "1"`, `query v ~ "^2"`, `gRPC
 * shop.Cart/Add`; an empty list when the match has none (it matches every
 * request).
 */
export function matchConditions(match: RouteMatch): string[] {
  const out: string[] = [];
  if (match.path !== undefined) {
    out.push(`path ${PATH_OPS[match.path.type] ?? "?"} ${match.path.value}`);
  }
  if (match.method !== "") out.push(`method ${match.method}`);
  for (const h of match.headers) out.push(`header ${h.name} ${stringOp(h.type)} "${h.value}"`);
  for (const q of match.queryParams) out.push(`query ${q.name} ${stringOp(q.type)} "${q.value}"`);
  const grpc = match.grpcMethod;
  if (grpc !== undefined) {
    const op = grpc.type === StringMatchType.REGULAR_EXPRESSION ? " ~" : "";
    out.push(`gRPC${op} ${grpc.service || "*"}/${grpc.method || "*"}`);
  }
  return out;
}

/** `set a=1, add b=2, remove c`; `no change` for an empty modifier. */
export function headerChanges(modifier: HeaderModifier | undefined): string {
  if (modifier === undefined) return "no change";
  const parts = [
    ...modifier.set.map((h) => `set ${h.name}=${h.value}`),
    ...modifier.add.map((h) => `add ${h.name}=${h.value}`),
    ...modifier.remove.map((name) => `remove ${name}`),
  ];
  return parts.length === 0 ? "no change" : parts.join(", ");
}

/** `full path → /v2` or `prefix → /v2`. */
function pathChange(modifier: PathModifier): string {
  const kind = modifier.type === PathModifierType.REPLACE_PREFIX_MATCH ? "prefix" : "full path";
  return `${kind} → ${modifier.value || '""'}`;
}

/** `ns/name:port`; `(unresolved):port` when the service is empty. */
export function backendName(backend: { service: string; port: number }): string {
  return `${backend.service || "(unresolved)"}:${backend.port}`;
}

/** `shop/checkout:8080`, `shop/checkout port http`, or `shop/checkout (all ports)`. */
export function parentName(ref: ParentRef): string {
  if (ref.sectionName !== "") return `${ref.service} port ${ref.sectionName}`;
  return ref.port === 0 ? `${ref.service} (all ports)` : `${ref.service}:${ref.port}`;
}

/** The redirect's target parts: `https://example.com:8443 full path → /new` style. */
function redirectLabel(filter: Extract<Filter["filter"], { case: "requestRedirect" }>["value"]) {
  const parts = [
    filter.scheme === undefined ? "" : `scheme ${filter.scheme}`,
    filter.hostname === undefined ? "" : `host ${filter.hostname}`,
    filter.port === undefined ? "" : `port ${filter.port}`,
    filter.path === undefined ? "" : pathChange(filter.path),
  ].filter((part) => part !== "");
  return `redirect ${filter.statusCode || 302}${parts.length > 0 ? `: ${parts.join(", ")}` : ""}`;
}

/**
 * One filter in words: `request headers: set a=1`, `redirect 301: scheme
 * https`, `rewrite: prefix → /v2`, `mirror to shop/x:80 (1/10)`, `extension
 * mesh.aether.dev/HTTPFilter auth` (with the HTTPFilter it resolved to, or
 * why not), `CORS: origins …`.
 */
export function filterLabel(filter: Filter): string {
  const f = filter.filter;
  switch (f.case) {
    case "requestHeaderModifier":
      return `request headers: ${headerChanges(f.value)}`;
    case "responseHeaderModifier":
      return `response headers: ${headerChanges(f.value)}`;
    case "requestRedirect":
      return redirectLabel(f.value);
    case "urlRewrite": {
      const host = f.value.hostname === undefined ? [] : [`host ${f.value.hostname}`];
      const path = f.value.path === undefined ? [] : [pathChange(f.value.path)];
      return `rewrite: ${[...host, ...path].join(", ") || "nothing"}`;
    }
    case "requestMirror": {
      const to = f.value.backend === undefined ? "(none)" : backendName(f.value.backend);
      const part = f.value.fraction;
      const share =
        part === undefined ? "" : ` (${part.numerator}/${part.denominator || 100} of requests)`;
      return `mirror to ${to}${share}`;
    }
    case "extensionRef": {
      const ref = f.value;
      const name = `extension ${ref.group === "" ? "" : `${ref.group}/`}${ref.kind} ${ref.name}`;
      if (ref.httpFilter !== undefined) {
        return `${name} → HTTPFilter ${ref.httpFilter.namespace}/${ref.httpFilter.name}`;
      }
      return ref.unresolvedReason === "" ? name : `${name} (unresolved: ${ref.unresolvedReason})`;
    }
    case "cors":
      return `CORS: origins ${f.value.allowOrigins.join(", ") || "(none)"}`;
    default:
      return "(empty filter)";
  }
}

/** A duration as `250ms`, `2s`, `1.5s`; `unset` when absent. */
export function durationLabel(duration: Duration | undefined): string {
  const ms = durationMs(duration);
  if (ms === undefined) return "unset";
  return ms < 1000 ? `${ms}ms` : `${Number((ms / 1000).toFixed(3))}s`;
}

/** `request 10s, per backend try 2s`; empty when the rule sets no timeout. */
export function timeoutsLabel(timeouts: RouteTimeouts | undefined): string {
  if (timeouts === undefined) return "";
  const parts = [
    timeouts.request === undefined ? "" : `request ${durationLabel(timeouts.request)}`,
    timeouts.backendRequest === undefined
      ? ""
      : `per backend try ${durationLabel(timeouts.backendRequest)}`,
  ];
  return parts.filter((part) => part !== "").join(", ");
}

/** `3 attempts on 502, 503 (backoff 100ms)`, `off`; empty when the rule has no policy. */
export function retryLabel(retry: RouteRetry | undefined): string {
  if (retry === undefined) return "";
  if (retry.attempts === 0) return "off";
  const attempts = retry.attempts === undefined ? "default attempts" : `${retry.attempts} attempts`;
  const codes = retry.codes.length === 0 ? "connection errors" : retry.codes.join(", ");
  const backoff = retry.backoff === undefined ? "" : ` (backoff ${durationLabel(retry.backoff)})`;
  return `${attempts} on ${codes}${backoff}`;
}

/** A weight's share of a total in percent (0 when the total is 0). */
export function sharePercent(weight: number, total: number): number {
  return total === 0 ? 0 : (weight / total) * 100;
}

/** A percentage with at most one decimal: `80%`, `33.3%`. */
export function percentLabel(percent: number): string {
  return `${Number(percent.toFixed(1))}%`;
}
