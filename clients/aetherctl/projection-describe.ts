/**
 * One-line descriptions of the parts of a projection (matches, filters,
 * backends, parent refs, route kinds and roles), shared by `aetherctl get`
 * and `aetherctl explain` so that both name things the same way. Pure.
 */
import {
  type Backend,
  type Filter,
  type GrpcMethodMatch,
  type HeaderModifier,
  type ParentRef,
  PathMatchType,
  type PathModifier,
  PathModifierType,
  RouteKind,
  type RouteMatch,
  RouteRole,
  StringMatchType,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { describeExtensionRef } from "./extension-ref-describe.js";

/** `HTTPRoute`, `GRPCRoute`, or `Route(unspecified)` for a kind readers reject. */
export function routeKindName(kind: RouteKind): string {
  if (kind === RouteKind.HTTP) return "HTTPRoute";
  if (kind === RouteKind.GRPC) return "GRPCRoute";
  return "Route(unspecified)";
}

/** `producer`, `consumer`, or `unspecified`. */
export function routeRoleName(role: RouteRole): string {
  if (role === RouteRole.PRODUCER) return "producer";
  if (role === RouteRole.CONSUMER) return "consumer";
  return "unspecified";
}

function quote(value: string): string {
  return JSON.stringify(value);
}

/** Describes a string condition: `name = "value"` (exact) or `name ~ "regex"`. */
function stringCondition(type: StringMatchType, name: string, value: string): string {
  const op =
    type === StringMatchType.EXACT ? "=" : type === StringMatchType.REGULAR_EXPRESSION ? "~" : "?";
  return `${name} ${op} ${quote(value)}`;
}

function pathCondition(type: PathMatchType, value: string): string {
  if (type === PathMatchType.EXACT) return `path = ${value}`;
  if (type === PathMatchType.PATH_PREFIX) return `path prefix ${value}`;
  if (type === PathMatchType.REGULAR_EXPRESSION) return `path ~ ${quote(value)}`;
  return `path ? ${quote(value)}`;
}

function grpcCondition(match: GrpcMethodMatch): string {
  const service = match.service === "" ? "*" : match.service;
  const method = match.method === "" ? "*" : match.method;
  const op = match.type === StringMatchType.REGULAR_EXPRESSION ? "~ " : "";
  return `grpc ${op}${service}/${method}`;
}

/**
 * Describes a match as its conditions joined with `, `, for example
 * `path prefix /cart, header x-beta = "true", method GET`; a match without
 * conditions matches everything and is described as `any request`.
 */
export function describeMatch(match: RouteMatch): string {
  const parts: string[] = [];
  if (match.path !== undefined) parts.push(pathCondition(match.path.type, match.path.value));
  if (match.method !== "") parts.push(`method ${match.method}`);
  for (const header of match.headers) {
    parts.push(`header ${stringCondition(header.type, header.name, header.value)}`);
  }
  for (const param of match.queryParams) {
    parts.push(`query ${stringCondition(param.type, param.name, param.value)}`);
  }
  if (match.grpcMethod !== undefined) parts.push(grpcCondition(match.grpcMethod));
  return parts.length === 0 ? "any request" : parts.join(", ");
}

/** Describes a header modifier: `set a: 1; add b: 2; remove c`. */
export function describeHeaderModifier(modifier: HeaderModifier): string {
  return [
    ...modifier.set.map((h) => `set ${h.name}: ${h.value}`),
    ...modifier.add.map((h) => `add ${h.name}: ${h.value}`),
    ...modifier.remove.map((name) => `remove ${name}`),
  ].join("; ");
}

/** Describes a path modifier: `path /new` (ReplaceFullPath) or `matched prefix → /new` (ReplacePrefixMatch). */
function describePathModifier(modifier: PathModifier): string {
  if (modifier.type === PathModifierType.REPLACE_FULL_PATH) return `path ${modifier.value}`;
  if (modifier.type === PathModifierType.REPLACE_PREFIX_MATCH) {
    return `matched prefix → ${modifier.value === "" ? '""' : modifier.value}`;
  }
  return `path ? ${quote(modifier.value)}`;
}

/** Describes a backend: `ns/name:port`, or `(unresolved):port` when its service is empty. */
export function backendAddress(backend: { service: string; port: number }): string {
  return `${backend.service === "" ? "(unresolved)" : backend.service}:${backend.port}`;
}

/** Describes a filter in one line, for example `request headers: set x-a: 1` or `redirect 301 scheme https`. */
export function describeFilter(filter: Filter): string {
  const f = filter.filter;
  switch (f.case) {
    case "requestHeaderModifier":
      return `request headers: ${describeHeaderModifier(f.value)}`;
    case "responseHeaderModifier":
      return `response headers: ${describeHeaderModifier(f.value)}`;
    case "requestRedirect": {
      const r = f.value;
      const parts = [
        r.scheme === undefined ? "" : `scheme ${r.scheme}`,
        r.hostname === undefined ? "" : `host ${r.hostname}`,
        r.port === undefined ? "" : `port ${r.port}`,
        r.path === undefined ? "" : describePathModifier(r.path),
      ].filter((p) => p !== "");
      return `redirect ${r.statusCode === 0 ? 302 : r.statusCode}${parts.length === 0 ? "" : ` ${parts.join(", ")}`}`;
    }
    case "urlRewrite": {
      const parts = [
        f.value.hostname === undefined ? "" : `host ${f.value.hostname}`,
        f.value.path === undefined ? "" : describePathModifier(f.value.path),
      ].filter((p) => p !== "");
      return `rewrite ${parts.join(", ")}`;
    }
    case "requestMirror": {
      const { backend, fraction } = f.value;
      const share =
        fraction === undefined
          ? ""
          : ` (${fraction.numerator}/${fraction.denominator === 0 ? 100 : fraction.denominator})`;
      return `mirror to ${backend === undefined ? "(none)" : backendAddress(backend)}${share}`;
    }
    case "extensionRef":
      return `extension ${describeExtensionRef(f.value)}`;
    case "cors": {
      const c = f.value;
      const parts = [
        `origins ${c.allowOrigins.join(",") || "(none)"}`,
        c.allowMethods.length > 0 ? `methods ${c.allowMethods.join(",")}` : "",
        c.allowHeaders.length > 0 ? `headers ${c.allowHeaders.join(",")}` : "",
        c.exposeHeaders.length > 0 ? `expose ${c.exposeHeaders.join(",")}` : "",
        c.allowCredentials ? "credentials" : "",
        c.maxAgeSeconds > 0 ? `max-age ${c.maxAgeSeconds}s` : "",
      ].filter((p) => p !== "");
      return `cors ${parts.join("; ")}`;
    }
    default:
      return "(empty filter)";
  }
}

/**
 * The share of a rule's traffic a backend receives: its weight over the sum
 * of the rule's weights, in percent (0 when every weight is 0).
 */
export function weightShare(backend: Backend, backends: readonly Backend[]): number {
  const total = backends.reduce((sum, b) => sum + b.weight, 0);
  return total === 0 ? 0 : (backend.weight / total) * 100;
}

/** Formats a percentage with at most one decimal: `90%`, `33.3%`. */
export function formatPercent(percent: number): string {
  return `${Number(percent.toFixed(1))}%`;
}

/** Describes a backend with its weight and share: `shop/checkout-v1:8080 weight 90 (90%)`. */
export function describeBackend(backend: Backend, backends: readonly Backend[]): string {
  const app = backend.appProtocol === "" ? "" : ` [${backend.appProtocol}]`;
  return `${backendAddress(backend)} weight ${backend.weight} (${formatPercent(weightShare(backend, backends))})${app}`;
}

/** Describes a parentRef: `shop/checkout:8080`, `shop/checkout (every port)`, or `shop/checkout port http`. */
export function describeParentRef(ref: ParentRef): string {
  if (ref.sectionName !== "") return `${ref.service} port ${ref.sectionName}`;
  return ref.port === 0 ? `${ref.service} (every port)` : `${ref.service}:${ref.port}`;
}

/**
 * The ports an entry keyed by port and section name applies to (a backend
 * TLS or VirtualHost entry): `port 8443 (https)`, `port 8443`, or `every
 * port` for port 0.
 */
export function describePortScope(entry: { port: number; sectionName: string }): string {
  if (entry.port === 0) return "every port";
  return entry.sectionName === ""
    ? `port ${entry.port}`
    : `port ${entry.port} (${entry.sectionName})`;
}
