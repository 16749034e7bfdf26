/**
 * The value syntaxes of the Gateway API that the projector validates: RE2
 * regular expressions (checked by an RE2 engine), GEP-2257
 * durations, hostnames, header names, HTTP paths and gRPC names. Pure, no I/O.
 */
import { compileRe2, type FullMatcher, re2Problem } from "./re2.js";

/**
 * Checks that `pattern` is a regular expression RE2 (what the data planes and
 * the evaluator use) accepts. Returns undefined when it is, and otherwise
 * RE2's own phrase for what is wrong, prefixed with `it is not RE2 syntax`
 * (for example `it is not RE2 syntax: invalid or unsupported Perl syntax: (?=`).
 * Lookarounds, backreferences and repetition counts above 1000 are refused,
 * as RE2 refuses them.
 */
export function regexProblem(pattern: string): string | undefined {
  const problem = re2Problem(pattern);
  return problem === undefined ? undefined : `it is not RE2 syntax: ${problem}`;
}

/**
 * Compiles a pattern accepted by {@link regexProblem} for a full match (the
 * whole input must match, as the contract's RE2 matches do). Throws a
 * SyntaxError for a pattern RE2 refuses.
 */
export function compileFullMatch(pattern: string): FullMatcher {
  const compiled = compileRe2(pattern);
  if (typeof compiled === "string") throw new SyntaxError(`${pattern}: ${compiled}`);
  return compiled;
}

const DURATION = /^([0-9]{1,5}(h|m|s|ms)){1,4}$/;
const DURATION_PART = /([0-9]{1,5})(ms|h|m|s)/g;
const UNIT_MILLIS: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };

/**
 * Parses a Gateway API duration (GEP-2257: one to four `<1-5 digits><h|m|s|ms>`
 * components, summed) into milliseconds. Returns undefined when `text` is not
 * one (for example `1.5s`, `-1s`, `1d` or `0`).
 */
export function parseGatewayDuration(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  for (const part of text.matchAll(DURATION_PART)) {
    total += Number(part[1]) * (UNIT_MILLIS[part[2] as string] as number);
  }
  return total;
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const WILDCARD_HOSTNAME =
  /^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Reports whether `value` is a DNS-1123 subdomain of at most 253 characters. */
export function isDnsSubdomain(value: string): boolean {
  return value.length <= 253 && DNS_SUBDOMAIN.test(value);
}

/** Reports whether `value` is a Gateway API `Hostname` (a DNS name, optionally `*.`-prefixed). */
export function isRouteHostname(value: string): boolean {
  return value.length <= 253 && WILDCARD_HOSTNAME.test(value);
}

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/;

/** Reports whether `value` is an HTTP header name token (Gateway API `HeaderName`). */
export function isHeaderName(value: string): boolean {
  return value.length <= 256 && HEADER_NAME.test(value);
}

const PATH_CHARACTERS = /^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|%[0-9a-fA-F]{2})+$/;

/**
 * Checks an `Exact` or `PathPrefix` path value the way the Gateway API CRD
 * does. Returns undefined when it is valid, otherwise a phrase saying why not.
 */
export function pathValueProblem(value: string): string | undefined {
  if (!value.startsWith("/")) return "it must be an absolute path starting with '/'";
  for (const bad of ["//", "/./", "/../", "%2f", "%2F", "#"]) {
    if (value.includes(bad)) return `it must not contain ${JSON.stringify(bad)}`;
  }
  if (value.endsWith("/..") || value.endsWith("/.")) return "it must not end with '/.' or '/..'";
  if (!PATH_CHARACTERS.test(value)) return "it contains characters that are not allowed in a path";
  return undefined;
}

const GRPC_SERVICE = /^\.?[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*$/i;
const GRPC_METHOD = /^[A-Za-z_][A-Za-z_0-9]*$/;

/** Reports whether `value` is a valid `Exact` gRPC service name (`pkg.Service`). */
export function isGrpcServiceName(value: string): boolean {
  return GRPC_SERVICE.test(value);
}

/** Reports whether `value` is a valid `Exact` gRPC method name. */
export function isGrpcMethodName(value: string): boolean {
  return GRPC_METHOD.test(value);
}

const CORS_ORIGIN =
  /(^\*$)|(^(http(s)?):\/\/(((\*\.)?([a-zA-Z0-9-]+\.)*[a-zA-Z0-9-]+|\*)(:([0-9]{1,5}))?)$)/;

/** Reports whether `value` is a Gateway API `CORSOrigin` (`*`, or `scheme://host[:port]`). */
export function isCorsOrigin(value: string): boolean {
  return value.length <= 253 && CORS_ORIGIN.test(value);
}
