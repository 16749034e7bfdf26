/**
 * The value syntaxes of the Gateway API that the projector validates: RE2
 * regular expressions (as far as JavaScript can check them), GEP-2257
 * durations, hostnames, header names, HTTP paths and gRPC names. Pure, no I/O.
 */

/** The largest repetition count RE2 accepts in `{n,m}`. */
const RE2_MAX_REPEAT = 1000;

/** Escapes that mean the same in RE2 and in a JavaScript RegExp without flags. */
const PORTABLE_LETTER_ESCAPES = new Set(["d", "D", "w", "W", "s", "S", "t", "n", "r", "f", "v"]);

/**
 * Checks that `pattern` is a regular expression that RE2 (what data planes
 * use) and JavaScript (what the evaluator uses) both accept with the same
 * meaning. Returns undefined when it is, and otherwise a short phrase saying
 * what is wrong (for example `lookaround assertions are not RE2 syntax`).
 *
 * It rejects constructs JavaScript cannot compile, and constructs RE2 lacks
 * or that the two read differently: lookarounds, backreferences and octal
 * escapes, `\k<name>`, `(?P<name>…)`, inline flags, POSIX classes, `\A`,
 * `\z`, `\Q…\E`, `\p{…}`, `\x{…}`, a `]` first in a class, and repetition
 * counts above 1000.
 */
export function regexProblem(pattern: string): string | undefined {
  const structural = scanRegex(pattern);
  if (structural !== undefined) return structural;
  try {
    new RegExp(pattern);
    return undefined;
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    return `it does not compile (${text.replace(/^Invalid regular expression: /, "")})`;
  }
}

/**
 * Compiles a pattern accepted by {@link regexProblem} for a full match (the
 * whole input must match, as the contract's RE2 matches do). Throws a
 * SyntaxError for a pattern that does not compile.
 */
export function compileFullMatch(pattern: string): RegExp {
  return new RegExp(`^(?:${pattern})$`);
}

function scanRegex(pattern: string): string | undefined {
  let inClass = false;
  let classStart = -1;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === "\\") {
      const problem = escapeProblem(pattern, i + 1, inClass);
      if (problem !== undefined) return problem;
      i++;
      continue;
    }
    if (inClass) {
      if (c === "[" && pattern[i + 1] === ":") return "POSIX character classes are not portable";
      if (c === "]" && i === classStart) return "a ']' first in a character class is not portable";
      if (c === "]") inClass = false;
      continue;
    }
    if (c === "[") {
      inClass = true;
      classStart = pattern[i + 1] === "^" ? i + 2 : i + 1;
      continue;
    }
    if (c === "(" && pattern[i + 1] === "?") {
      const problem = groupProblem(pattern.slice(i + 2, i + 5));
      if (problem !== undefined) return problem;
      continue;
    }
    if (c === "{") {
      const repeat = /^\{(\d+)(?:,(\d*))?\}/.exec(pattern.slice(i));
      if (repeat !== null && Math.max(Number(repeat[1]), Number(repeat[2] ?? 0)) > RE2_MAX_REPEAT) {
        return `repetition counts above ${RE2_MAX_REPEAT} are not RE2 syntax`;
      }
    }
  }
  return undefined;
}

function escapeProblem(pattern: string, at: number, inClass: boolean): string | undefined {
  const next = pattern[at];
  if (next === undefined) return "it ends with a lone backslash";
  if (/[0-9]/.test(next)) return "backreferences and octal escapes are not RE2 syntax";
  if (next === "x") {
    return /^[0-9A-Fa-f]{2}$/.test(pattern.slice(at + 1, at + 3))
      ? undefined
      : "only \\xHH hexadecimal escapes are portable";
  }
  if ((next === "b" || next === "B") && !inClass) return undefined;
  if (/[A-Za-z]/.test(next) && !PORTABLE_LETTER_ESCAPES.has(next)) {
    return `the escape \\${next} is not portable between RE2 and JavaScript`;
  }
  return undefined;
}

function groupProblem(head: string): string | undefined {
  if (head === "") return undefined;
  if (head.startsWith("=") || head.startsWith("!") || /^<[=!]/.test(head)) {
    return "lookaround assertions are not RE2 syntax";
  }
  if (head.startsWith("P")) return "(?P…) groups are not JavaScript syntax; use (?<name>…)";
  if (head.startsWith(":") || head.startsWith("<")) return undefined;
  return "inline flags are not JavaScript syntax";
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
