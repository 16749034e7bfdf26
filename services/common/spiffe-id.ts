/**
 * SPIFFE IDs (`spiffe://trust-domain/path`) as the SPIFFE ID standard
 * defines them: the `spiffe` scheme, a trust domain of lower-case letters,
 * digits, `.`, `-` and `_` (at most 255 bytes; no userinfo, port, query,
 * fragment or percent-encoding), and a path of non-empty segments of letters,
 * digits, `.`, `-` and `_` (no `.` or `..` segment, no trailing `/`), at most
 * 2048 bytes in all. Strict like the reference implementation (go-spiffe):
 * an upper-case scheme or trust domain is refused rather than normalized.
 * Pure, no I/O.
 */

/** The longest SPIFFE ID accepted, in bytes (ASCII only, so characters). */
export const MAX_SPIFFE_ID_LENGTH = 2048;

/** The longest trust domain name accepted (a URI host). */
export const MAX_TRUST_DOMAIN_LENGTH = 255;

const SCHEME = "spiffe://";
const TRUST_DOMAIN = /^[a-z0-9._-]+$/;
const SEGMENT = /^[a-zA-Z0-9._-]+$/;

/** A valid SPIFFE ID, split. */
export interface SpiffeId {
  /** The trust domain name, e.g. `east.mesh`. */
  readonly trustDomain: string;
  /** The path, `""` (the trust domain's own ID) or starting with `/`, e.g. `/ns/a/sa/b`. */
  readonly path: string;
  /** The whole ID, `spiffe://` + trust domain + path. */
  readonly text: string;
}

/** What {@link parseSpiffeId} found: the ID, or a sentence saying what is wrong. */
export type SpiffeIdParse =
  | { readonly id: SpiffeId; readonly error?: undefined }
  | { readonly id?: undefined; readonly error: string };

/**
 * Checks a trust domain name. Returns undefined when valid, and otherwise a
 * sentence naming it and what is wrong.
 */
export function checkTrustDomain(name: string): string | undefined {
  const quoted = JSON.stringify(name);
  if (name === "") return "the trust domain is missing";
  if (name.length > MAX_TRUST_DOMAIN_LENGTH) {
    return `trust domain ${quoted.slice(0, 40)}…" is longer than ${MAX_TRUST_DOMAIN_LENGTH} characters`;
  }
  if (TRUST_DOMAIN.test(name)) return undefined;
  if (name.includes("@") || /:\d*$/.test(name)) {
    return `trust domain ${quoted} must not have a user, password or port (no "@" or ":")`;
  }
  if (name.includes("%")) return `trust domain ${quoted} must not be percent-encoded`;
  if (/[A-Z]/.test(name) && TRUST_DOMAIN.test(name.toLowerCase())) {
    return `trust domain ${quoted} must be lower-case`;
  }
  return `trust domain ${quoted} may contain only lower-case letters, digits, ".", "-" and "_"`;
}

/** Checks a path (`""` or `/seg/seg`); undefined when valid, else a sentence. */
function checkPath(path: string): string | undefined {
  if (path === "") return undefined;
  const quoted = JSON.stringify(path);
  if (path.endsWith("/")) return `path ${quoted} must not end with "/"`;
  for (const segment of path.slice(1).split("/")) {
    if (segment === "") return `path ${quoted} has an empty segment ("//")`;
    if (segment === "." || segment === "..") {
      return `path ${quoted} must not have a "." or ".." segment`;
    }
    if (!SEGMENT.test(segment)) {
      if (segment.includes("%")) return `path ${quoted} must not be percent-encoded`;
      return `path ${quoted}: segment ${JSON.stringify(segment)} may contain only letters, digits, ".", "-" and "_"`;
    }
  }
  return undefined;
}

/**
 * Parses a SPIFFE ID. Returns `{ id }` when `text` is a valid SPIFFE ID
 * (with or without a path), and otherwise `{ error }`: a sentence that
 * quotes the text and says what is wrong, suitable for a flag's usage error
 * or a refusal's log line.
 */
export function parseSpiffeId(text: string): SpiffeIdParse {
  const fail = (why: string): SpiffeIdParse => ({
    error: `${JSON.stringify(text.length > 120 ? `${text.slice(0, 120)}…` : text)} is not a SPIFFE ID: ${why}`,
  });
  if (text.length > MAX_SPIFFE_ID_LENGTH) {
    return fail(`longer than ${MAX_SPIFFE_ID_LENGTH} characters`);
  }
  if (!text.startsWith(SCHEME)) {
    return fail(
      /^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(text)
        ? 'the scheme must be "spiffe" (spiffe://trust-domain/path)'
        : "it must look like spiffe://trust-domain/path",
    );
  }
  if (/[?#]/.test(text)) return fail("it must not have a query (?) or fragment (#)");
  const rest = text.slice(SCHEME.length);
  const slash = rest.indexOf("/");
  const trustDomain = slash === -1 ? rest : rest.slice(0, slash);
  const path = slash === -1 ? "" : rest.slice(slash);
  const problem = checkTrustDomain(trustDomain) ?? checkPath(path);
  if (problem !== undefined) return fail(problem);
  return { id: { trustDomain, path, text } };
}
