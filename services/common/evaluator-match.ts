/**
 * The match conditions of the request evaluator: hostnames (exact and
 * `*.` wildcards), paths (Exact, element-wise PathPrefix, full-match regular
 * expressions in RE2's linear time), headers, query parameters, methods and gRPC methods, as the
 * Gateway API defines them. Pure, no I/O.
 */
import {
  type GrpcMethodMatch,
  type HeaderMatch,
  type PathMatch,
  PathMatchType,
  type QueryParamMatch,
  StringMatchType,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { headerValue } from "./evaluator-headers.js";
import type { HeaderMap } from "./evaluator-types.js";
import { re2FullMatch } from "./re2.js";

/**
 * Reports whether `value` matches `pattern` (RE2) as a whole, in time linear
 * in `value`; a pattern RE2 refuses matches nothing.
 */
export function fullMatch(pattern: string, value: string): boolean {
  return re2FullMatch(pattern, value);
}

/**
 * Returns the host part of an authority, lower case, without a port or a
 * trailing dot: `Foo.com:8080` → `foo.com`, `[::1]:80` → `::1`.
 */
export function hostWithoutPort(authority: string): string {
  let host = authority.trim().toLowerCase();
  if (host.startsWith("[")) {
    const end = host.indexOf("]");
    host = end < 0 ? host.slice(1) : host.slice(1, end);
  } else {
    const colon = host.indexOf(":");
    if (colon >= 0 && host.indexOf(":", colon + 1) < 0) host = host.slice(0, colon);
  }
  return host.endsWith(".") ? host.slice(0, -1) : host;
}

/** Returns the port in an authority (`foo.com:8080` → 8080), or undefined when it has none. */
export function portOfAuthority(authority: string): number | undefined {
  const match = /^(?:\[[^\]]*\]|[^:[\]]*):(\d+)$/.exec(authority.trim());
  return match === null ? undefined : Number(match[1]);
}

/**
 * Reports whether `host` (lower case, no port) matches a hostname pattern:
 * equal to an exact name, or for `*.example.com` any name with at least one
 * more label (`a.example.com`, `a.b.example.com`, not `example.com`).
 */
export function hostnameMatches(pattern: string, host: string): boolean {
  const p = pattern.toLowerCase();
  if (p.startsWith("*.")) {
    const suffix = p.slice(1);
    return host.length > suffix.length && host.endsWith(suffix);
  }
  return p === host;
}

/**
 * The precedence of a matching hostname, compared element by element, larger
 * first: the characters of a matching non-wildcard hostname, then the
 * characters of the matching hostname.
 */
export type HostnameRank = readonly [exactChars: number, chars: number];

/**
 * Finds the most specific of `hostnames` that matches `host`. An empty list
 * matches every host with rank [0, 0]; otherwise returns undefined when none
 * matches.
 */
export function bestHostname(
  hostnames: readonly string[],
  host: string,
): { hostname: string | undefined; rank: HostnameRank } | undefined {
  if (hostnames.length === 0) return { hostname: undefined, rank: [0, 0] };
  let best: { hostname: string; rank: HostnameRank } | undefined;
  for (const hostname of hostnames) {
    if (!hostnameMatches(hostname, host)) continue;
    const rank: HostnameRank = hostname.startsWith("*.")
      ? [0, hostname.length]
      : [hostname.length, hostname.length];
    if (best === undefined || compareRanks(rank, best.rank) < 0) best = { hostname, rank };
  }
  return best;
}

/** Compares two rank tuples element-wise, larger first: negative when `a` ranks higher. */
export function compareRanks(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (b[i] ?? 0) - (a[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Splits a request target into its path (without query or fragment) and its raw query. */
export function splitTarget(target: string): { path: string; query: string | undefined } {
  const hash = target.indexOf("#");
  const noFragment = hash < 0 ? target : target.slice(0, hash);
  const q = noFragment.indexOf("?");
  if (q < 0) return { path: noFragment === "" ? "/" : noFragment, query: undefined };
  const path = noFragment.slice(0, q);
  return { path: path === "" ? "/" : path, query: noFragment.slice(q + 1) };
}

function decodeComponent(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * Parses a raw query string into parameter names mapped to their values in
 * order. Names and values are percent-decoded; `a` without `=` has value "".
 */
export function parseQuery(query: string | undefined): ReadonlyMap<string, readonly string[]> {
  const params = new Map<string, string[]>();
  if (query === undefined || query === "") return params;
  for (const part of query.split("&")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    const name = decodeComponent(eq < 0 ? part : part.slice(0, eq));
    const value = eq < 0 ? "" : decodeComponent(part.slice(eq + 1));
    const values = params.get(name);
    if (values === undefined) params.set(name, [value]);
    else values.push(value);
  }
  return params;
}

/** Strips one trailing `/` from a prefix (but keeps `/` itself). */
export function trimPrefix(prefix: string): string {
  return prefix.length > 1 && prefix.endsWith("/") ? prefix.slice(0, -1) : prefix;
}

/**
 * Reports whether `path` matches a PathPrefix value element-wise: `/v2`
 * (or `/v2/`) matches `/v2`, `/v2/` and `/v2/x`, not `/v2x`; `/` matches
 * every path.
 */
export function pathPrefixMatches(prefix: string, path: string): boolean {
  const p = trimPrefix(prefix);
  if (p === "/") return path.startsWith("/");
  return path === p || path.startsWith(`${p}/`);
}

/**
 * Reports whether `path` (no query) satisfies a path condition; an unset
 * condition means `PathPrefix /`, and an unspecified type matches nothing.
 */
export function pathMatches(match: PathMatch | undefined, path: string): boolean {
  if (match === undefined) return pathPrefixMatches("/", path);
  switch (match.type) {
    case PathMatchType.EXACT:
      return path === match.value;
    case PathMatchType.PATH_PREFIX:
      return pathPrefixMatches(match.value, path);
    case PathMatchType.REGULAR_EXPRESSION:
      return fullMatch(match.value, path);
    default:
      return false;
  }
}

function stringMatches(type: StringMatchType, expected: string, actual: string): boolean {
  if (type === StringMatchType.EXACT) return actual === expected;
  if (type === StringMatchType.REGULAR_EXPRESSION) return fullMatch(expected, actual);
  return false;
}

/**
 * Keeps the first condition of each name: the Gateway API says only the first
 * of several entries with an equivalent name is considered. `fold` lower-cases
 * names for header conditions.
 */
export function firstPerName<T extends { name: string }>(
  conditions: readonly T[],
  fold: boolean,
): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  for (const condition of conditions) {
    const key = fold ? condition.name.toLowerCase() : condition.name;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(condition);
  }
  return out;
}

/**
 * Reports whether every header condition holds. Names are case-insensitive;
 * a header with several values is compared joined with `,`.
 */
export function headersMatch(conditions: readonly HeaderMatch[], headers: HeaderMap): boolean {
  return firstPerName(conditions, true).every((condition) => {
    const actual = headerValue(headers, condition.name);
    return actual !== undefined && stringMatches(condition.type, condition.value, actual);
  });
}

/**
 * Reports whether every query parameter condition holds. Names and values are
 * case-sensitive; when a parameter repeats, its first value is compared.
 */
export function queryParamsMatch(
  conditions: readonly QueryParamMatch[],
  params: ReadonlyMap<string, readonly string[]>,
): boolean {
  return firstPerName(conditions, false).every((condition) => {
    const actual = params.get(condition.name)?.[0];
    return actual !== undefined && stringMatches(condition.type, condition.value, actual);
  });
}

/**
 * Reports whether a gRPC service/method condition holds; an unset condition,
 * or an empty service or method, matches anything in that position.
 */
export function grpcMethodMatches(
  match: GrpcMethodMatch | undefined,
  service: string,
  method: string,
): boolean {
  if (match === undefined) return true;
  const serviceOk = match.service === "" || stringMatches(match.type, match.service, service);
  const methodOk = match.method === "" || stringMatches(match.type, match.method, method);
  return serviceOk && methodOk;
}
