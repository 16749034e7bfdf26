/**
 * The `--authorize PATTERN` rules: which authenticated SPIFFE IDs may call.
 * A pattern is an exact workload ID (`spiffe://east.mesh/ns/a/sa/b`) or a
 * prefix ending in `/*` (`spiffe://east.mesh/*`, `spiffe://east.mesh/ns/a/*`)
 * that matches every ID below it, segment-wise: `spiffe://east.mesh/ns/a/*`
 * matches `.../ns/a/sa/b` but neither `.../ns/a` itself nor `.../ns/ab/x`.
 * Pure, no I/O.
 */
import { parseSpiffeId, type SpiffeId } from "./spiffe-id.js";

/** One parsed `--authorize` pattern. */
export type AuthorizePattern =
  | {
      readonly kind: "exact";
      /** The ID, as given. */
      readonly text: string;
    }
  | {
      readonly kind: "prefix";
      /** The pattern as given, ending in `/*`. */
      readonly text: string;
      /** What a matching ID starts with: the pattern without its `*` (ends in `/`). */
      readonly prefix: string;
    };

/** What {@link parseAuthorizePattern} found: the pattern, or a sentence saying what is wrong. */
export type AuthorizePatternParse =
  | { readonly pattern: AuthorizePattern; readonly error?: undefined }
  | { readonly pattern?: undefined; readonly error: string };

/**
 * Parses one `--authorize` pattern. Returns `{ pattern }`, or `{ error }`
 * (quoting the pattern) when it is not a SPIFFE ID with a path nor a valid
 * SPIFFE ID followed by `/*`, or has a `*` anywhere else.
 */
export function parseAuthorizePattern(text: string): AuthorizePatternParse {
  const quoted = JSON.stringify(text);
  const wildcard = text.endsWith("/*");
  const base = wildcard ? text.slice(0, -2) : text;
  if (wildcard && text.startsWith("spiffe://") && !base.startsWith("spiffe://")) {
    return {
      error: `--authorize ${quoted}: "*" stands for path segments, not a trust domain; name the trust domain ("spiffe://east.mesh/*")`,
    };
  }
  if (base.includes("*")) {
    return {
      error: `--authorize ${quoted}: "*" is allowed only as the whole last segment ("spiffe://east.mesh/*", "spiffe://east.mesh/ns/a/*")`,
    };
  }
  const parsed = parseSpiffeId(base);
  if (parsed.error !== undefined) return { error: `--authorize ${quoted}: ${parsed.error}` };
  if (wildcard) return { pattern: { kind: "prefix", text, prefix: `${base}/` } };
  if (parsed.id.path === "") {
    return {
      error: `--authorize ${quoted} names a trust domain, which no workload has as its ID; write ${JSON.stringify(`${text}/*`)} to allow every ID in it`,
    };
  }
  return { pattern: { kind: "exact", text } };
}

/** Whether `id` matches `pattern` (see the module comment). */
export function matchesAuthorizePattern(id: SpiffeId, pattern: AuthorizePattern): boolean {
  return pattern.kind === "exact" ? id.text === pattern.text : id.text.startsWith(pattern.prefix);
}

/**
 * Whether `id` may call under the `--authorize` patterns given: true when it
 * matches one of them, and when none was given at all (the flag's contract:
 * without `--authorize`, every ID that the verifier authenticated, so every ID
 * of a configured trust domain, is allowed).
 */
export function isAuthorized(id: SpiffeId, patterns: readonly AuthorizePattern[]): boolean {
  return patterns.length === 0 || patterns.some((pattern) => matchesAuthorizePattern(id, pattern));
}
