/**
 * Opaque page tokens for ListConfig and ListAllConfig. A token pins the store
 * revision the first page was read at (so every page of a listing is one
 * consistent snapshot) and the position after the last entry served, and is
 * bound to the query it came from: a token presented with another query is
 * refused instead of silently skipping or repeating entries.
 *
 * Tokens are authenticated (a 128-bit HMAC-SHA-256 of the body under the
 * registrar's page-token key, in front of it; all base64url) and expire: a caller cannot make one up to read the store at a
 * revision of its choosing (a past one would show projections deleted
 * since), nor keep one for later. Registrar replicas behind one Service share
 * the key (`--page-token-key-file`) so that any replica takes any page's
 * token; without one, each process makes its own at start.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** Where the next page of a listing starts. */
export interface PageCursor {
  /** The store revision the listing is read at. */
  readonly revision: number;
  /** The origin of the last entry served ("" when the listing is by service only). */
  readonly origin: string;
  /** The service of the last entry served. */
  readonly service: string;
}

/** A page token that is malformed, forged, expired or belongs to another query. */
export class PageTokenError extends Error {
  override readonly name = "PageTokenError";
}

/** Makes and checks the page tokens of one registrar (see the module comment). */
export interface PageTokens {
  /** Encodes a cursor for a query (see {@link queryFingerprint}) as an authenticated token. */
  encode(fingerprint: string, cursor: PageCursor): string;
  /**
   * Decodes a token presented with a query. Throws {@link PageTokenError}
   * with a message that says what is wrong when the token is not one this
   * registrar (or a replica with the same key) made, has expired, or was
   * made for another query.
   */
  decode(fingerprint: string, token: string): PageCursor;
}

/** Options of {@link createPageTokens}. */
export interface PageTokenOptions {
  /** The HMAC key, at least 16 bytes; default 32 random bytes (this process only). */
  readonly key?: Uint8Array;
  /** How long a token is accepted after it was made, in milliseconds; default 5 minutes. */
  readonly ttlMs?: number;
  /** The clock, in milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
}

/** The default of {@link PageTokenOptions.ttlMs}: longer than any paginated read takes. */
export const DEFAULT_PAGE_TOKEN_TTL_MS = 5 * 60_000;
/** The shortest key {@link createPageTokens} takes. */
export const MIN_PAGE_TOKEN_KEY_BYTES = 16;

const TOKEN_VERSION = 2;
/** The MAC is cut to this many bytes (128 bits): plenty against forgery, shorter tokens. */
const MAC_BYTES = 16;
const NOT_OURS = "page_token is not a token returned by this service";

/**
 * Returns a stable fingerprint of a query: the RPC and every request field that
 * selects entries (not the page size, which may change between pages).
 */
export function queryFingerprint(parts: readonly (string | number | readonly string[])[]): string {
  const canonical = JSON.stringify(
    parts.map((part) => (Array.isArray(part) ? [...new Set(part)].sort() : part)),
  );
  return createHash("sha256").update(canonical).digest("base64url").slice(0, 16);
}

/**
 * Creates the token maker of a registrar. Throws a TypeError for a key
 * shorter than {@link MIN_PAGE_TOKEN_KEY_BYTES}.
 */
export function createPageTokens(options: PageTokenOptions = {}): PageTokens {
  const key = options.key ?? randomBytes(32);
  if (key.length < MIN_PAGE_TOKEN_KEY_BYTES) {
    throw new TypeError(`the page token key has ${key.length} bytes; at least 16 are needed`);
  }
  const ttlMs = options.ttlMs ?? DEFAULT_PAGE_TOKEN_TTL_MS;
  const now = options.now ?? Date.now;
  const mac = (body: Uint8Array): Buffer =>
    createHmac("sha256", key).update(body).digest().subarray(0, MAC_BYTES);

  return {
    encode(fingerprint, cursor) {
      const body = Buffer.from(
        JSON.stringify([
          TOKEN_VERSION,
          fingerprint,
          cursor.revision,
          cursor.origin,
          cursor.service,
          now(),
        ]),
        "utf8",
      );
      return Buffer.concat([mac(body), body]).toString("base64url");
    },
    decode(fingerprint, token) {
      if (!/^[A-Za-z0-9_-]+$/.test(token)) throw new PageTokenError(NOT_OURS);
      const bytes = Buffer.from(token, "base64url");
      const presented = bytes.subarray(0, MAC_BYTES);
      const body = bytes.subarray(MAC_BYTES);
      const expected = mac(body);
      if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
        throw new PageTokenError(NOT_OURS);
      }
      const parsed = parseBody(body);
      if (now() - parsed.issuedAt > ttlMs) {
        throw new PageTokenError(
          `page_token expired (tokens are good for ${Math.round(ttlMs / 1000)} s): start the listing again without a token`,
        );
      }
      if (parsed.fingerprint !== fingerprint) {
        throw new PageTokenError(
          "page_token belongs to a different query: repeat the request's origin, services and view unchanged, or start again without a token",
        );
      }
      return parsed.cursor;
    },
  };
}

/** Parses an authenticated token body; a body of another shape is not ours. */
function parseBody(body: Uint8Array): {
  fingerprint: string;
  cursor: PageCursor;
  issuedAt: number;
} {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body).toString("utf8"));
  } catch {
    throw new PageTokenError(NOT_OURS);
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 6 ||
    parsed[0] !== TOKEN_VERSION ||
    typeof parsed[1] !== "string" ||
    !Number.isSafeInteger(parsed[2]) ||
    (parsed[2] as number) < 1 ||
    typeof parsed[3] !== "string" ||
    typeof parsed[4] !== "string" ||
    !Number.isSafeInteger(parsed[5])
  ) {
    throw new PageTokenError(NOT_OURS);
  }
  return {
    fingerprint: parsed[1],
    cursor: { revision: parsed[2] as number, origin: parsed[3], service: parsed[4] },
    issuedAt: parsed[5] as number,
  };
}
