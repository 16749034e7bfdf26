/**
 * The filter semantics of the request evaluator that need more than a header
 * operation: path modifiers (ReplaceFullPath, ReplacePrefixMatch), redirect
 * Locations with the Gateway API's scheme and port defaults, CORS, and the
 * rule's timeouts and retry policy. Pure, no I/O.
 */
import type { Duration } from "@bufbuild/protobuf/wkt";
import {
  type Cors,
  type PathModifier,
  PathModifierType,
  type RequestRedirect,
  type RouteRetry,
  type RouteTimeouts,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { headerValue } from "./evaluator-headers.js";
import { trimPrefix } from "./evaluator-match.js";
import type {
  DecisionRedirect,
  DecisionRetry,
  DecisionTimeouts,
  HeaderChange,
  HeaderMap,
} from "./evaluator-types.js";

/** The well-known port of a scheme (http 80, https 443), or undefined. */
export function wellKnownPort(scheme: string): number | undefined {
  const lower = scheme.toLowerCase();
  if (lower === "http") return 80;
  if (lower === "https") return 443;
  return undefined;
}

/**
 * Applies a path modifier to `path` (no query). `matchedPrefix` is the
 * PathPrefix value that matched the request (`/` for a rule without
 * matches); ReplacePrefixMatch replaces it element-wise as the Gateway API's
 * table specifies (`/foo/bar` with prefix `/foo` and replacement `/xyz` or
 * `/xyz/` gives `/xyz/bar`; an empty replacement gives `/bar`). Without a
 * matched prefix, ReplacePrefixMatch leaves the path unchanged.
 */
export function modifyPath(
  modifier: PathModifier | undefined,
  path: string,
  matchedPrefix: string | undefined,
): string {
  if (modifier === undefined) return path;
  if (modifier.type === PathModifierType.REPLACE_FULL_PATH) return modifier.value;
  if (modifier.type !== PathModifierType.REPLACE_PREFIX_MATCH || matchedPrefix === undefined) {
    return path;
  }
  const prefix = trimPrefix(matchedPrefix);
  // The prefix matched element-wise, so the remainder is empty or starts with "/".
  const remainder = prefix === "/" ? path : path.slice(prefix.length);
  const replacement = modifier.value.endsWith("/") ? modifier.value.slice(0, -1) : modifier.value;
  const result = `${replacement}${remainder}`;
  return result === "" ? "/" : result;
}

/** The parts of the request a redirect Location defaults to. */
export interface RedirectBase {
  /** The request scheme. */
  readonly scheme: string;
  /** The request host, without a port. */
  readonly hostname: string;
  /** The port the request was received on (the listener port). */
  readonly port: number;
  /** The request path, without the query. */
  readonly path: string;
  /** The raw query string, when the request had one; it is kept in the Location. */
  readonly query: string | undefined;
}

/**
 * Builds the redirect answer. Unset fields keep the request's own: scheme,
 * hostname and path. The port is the filter's port; else, when the filter
 * sets a scheme, that scheme's well-known port; else the listener port. The
 * port is left out of the Location for http:80 and https:443. The status
 * defaults to 302.
 */
export function buildRedirect(
  redirect: RequestRedirect,
  base: RedirectBase,
  matchedPrefix: string | undefined,
): DecisionRedirect {
  const scheme = redirect.scheme ?? base.scheme;
  const hostname = redirect.hostname ?? base.hostname;
  const port =
    redirect.port ??
    (redirect.scheme !== undefined ? (wellKnownPort(scheme) ?? base.port) : base.port);
  const shownPort = wellKnownPort(scheme) === port ? undefined : port;
  const path = modifyPath(redirect.path, base.path, matchedPrefix);
  const hostPart = hostname.includes(":") ? `[${hostname}]` : hostname;
  const portPart = shownPort === undefined ? "" : `:${shownPort}`;
  const queryPart = base.query === undefined ? "" : `?${base.query}`;
  return {
    statusCode: redirect.statusCode === 0 ? 302 : redirect.statusCode,
    location: `${scheme}://${hostPart}${portPart}${path}${queryPart}`,
    scheme,
    hostname,
    port: shownPort,
    path,
  };
}

function originParts(
  origin: string,
): { scheme: string; host: string; port: number | undefined } | undefined {
  const match = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/:]+|\[[^\]]+\])(?::(\d+))?\/?$/.exec(origin);
  if (match === null) return undefined;
  const scheme = (match[1] as string).toLowerCase();
  const explicit = match[3] === undefined ? undefined : Number(match[3]);
  return {
    scheme,
    host: (match[2] as string).toLowerCase(),
    port: explicit ?? wellKnownPort(scheme),
  };
}

/**
 * Reports whether a request Origin is allowed by a CORS policy: `*` allows
 * every origin; otherwise scheme, host and port must equal an entry's, where
 * an entry host `*.example.com` matches any subdomain of `example.com`.
 */
export function corsOriginAllowed(policy: Cors, origin: string): boolean {
  if (policy.allowOrigins.includes("*")) return true;
  const actual = originParts(origin);
  if (actual === undefined) return false;
  return policy.allowOrigins.some((entry) => {
    const allowed = originParts(entry);
    if (allowed === undefined || allowed.scheme !== actual.scheme) return false;
    if (allowed.port !== actual.port) return false;
    if (allowed.host.startsWith("*.")) {
      const suffix = allowed.host.slice(1);
      return actual.host.length > suffix.length && actual.host.endsWith(suffix);
    }
    return allowed.host === actual.host;
  });
}

/** Reports whether a request is a CORS preflight: OPTIONS with Origin and Access-Control-Request-Method. */
export function isCorsPreflight(method: string, headers: HeaderMap): boolean {
  return (
    method === "OPTIONS" &&
    headerValue(headers, "origin") !== undefined &&
    headerValue(headers, "access-control-request-method") !== undefined
  );
}

/**
 * The response headers a CORS policy adds for an allowed origin, as header
 * operations. For a preflight: Allow-Origin, Allow-Methods, Allow-Headers,
 * Expose-Headers, Max-Age and Allow-Credentials; for other requests:
 * Allow-Origin, Allow-Credentials and Expose-Headers. Wildcards are answered
 * with `*` only when credentials are not allowed; otherwise the request's own
 * origin, method or headers are echoed.
 */
export function corsResponseChanges(
  policy: Cors,
  origin: string,
  preflight: boolean,
  headers: HeaderMap,
): HeaderChange[] {
  const changes: HeaderChange[] = [];
  const set = (name: string, value: string | undefined): void => {
    if (value !== undefined && value !== "") changes.push({ op: "set", name, value });
  };
  const wildcard = (list: readonly string[], echo: string | undefined): string | undefined => {
    if (!list.includes("*")) return list.join(", ");
    return policy.allowCredentials ? echo : "*";
  };
  set(
    "access-control-allow-origin",
    policy.allowOrigins.includes("*") && !policy.allowCredentials ? "*" : origin,
  );
  if (preflight) {
    set(
      "access-control-allow-methods",
      wildcard(policy.allowMethods, headerValue(headers, "access-control-request-method")),
    );
    set(
      "access-control-allow-headers",
      wildcard(policy.allowHeaders, headerValue(headers, "access-control-request-headers")),
    );
    if (policy.maxAgeSeconds > 0) set("access-control-max-age", String(policy.maxAgeSeconds));
  }
  set("access-control-expose-headers", wildcard(policy.exposeHeaders, undefined));
  if (policy.allowCredentials) set("access-control-allow-credentials", "true");
  return changes;
}

/** A protobuf Duration in milliseconds (nanoseconds rounded); undefined when unset. */
export function durationMs(duration: Duration | undefined): number | undefined {
  if (duration === undefined) return undefined;
  return Number(duration.seconds) * 1000 + Math.round(duration.nanos / 1e6);
}

/** Converts a rule's timeouts to milliseconds; undefined when the rule sets none. */
export function timeoutsOf(timeouts: RouteTimeouts | undefined): DecisionTimeouts | undefined {
  if (timeouts === undefined) return undefined;
  const requestMs = durationMs(timeouts.request);
  const backendRequestMs = durationMs(timeouts.backendRequest);
  if (requestMs === undefined && backendRequestMs === undefined) return undefined;
  return { requestMs, backendRequestMs };
}

/** Converts a rule's retry policy to a {@link DecisionRetry}; undefined when the rule has none. */
export function retryOf(retry: RouteRetry | undefined): DecisionRetry | undefined {
  if (retry === undefined) return undefined;
  return {
    codes: [...retry.codes],
    attempts: retry.attempts,
    backoffMs: durationMs(retry.backoff),
  };
}
