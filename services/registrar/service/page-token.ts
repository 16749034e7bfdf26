/**
 * Opaque page tokens for ListConfig and ListAllConfig. A token pins the store
 * revision the first page was read at (so every page of a listing is one
 * consistent snapshot) and the position after the last entry served, and is
 * bound to the query it came from: a token presented with another query is
 * refused instead of silently skipping or repeating entries.
 */
import { createHash } from "node:crypto";

/** Where the next page of a listing starts. */
export interface PageCursor {
  /** The store revision the listing is read at. */
  readonly revision: number;
  /** The origin of the last entry served ("" when the listing is by service only). */
  readonly origin: string;
  /** The service of the last entry served. */
  readonly service: string;
}

/** A page token that is malformed or belongs to another query. */
export class PageTokenError extends Error {
  override readonly name = "PageTokenError";
}

const TOKEN_VERSION = 1;

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

/** Encodes a cursor for a query (see {@link queryFingerprint}) as an opaque token. */
export function encodePageToken(fingerprint: string, cursor: PageCursor): string {
  const body = JSON.stringify([
    TOKEN_VERSION,
    fingerprint,
    cursor.revision,
    cursor.origin,
    cursor.service,
  ]);
  return Buffer.from(body, "utf8").toString("base64url");
}

/**
 * Decodes a token presented with a query. Throws {@link PageTokenError} with a
 * message that says what is wrong when the token is not one this server made,
 * or was made for another query.
 */
export function decodePageToken(fingerprint: string, token: string): PageCursor {
  let parsed: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(token)) throw new Error("not base64url");
    parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw new PageTokenError("page_token is not a token returned by this service");
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 5 ||
    parsed[0] !== TOKEN_VERSION ||
    typeof parsed[1] !== "string" ||
    !Number.isSafeInteger(parsed[2]) ||
    (parsed[2] as number) < 1 ||
    typeof parsed[3] !== "string" ||
    typeof parsed[4] !== "string"
  ) {
    throw new PageTokenError("page_token is not a token returned by this service");
  }
  if (parsed[1] !== fingerprint) {
    throw new PageTokenError(
      "page_token belongs to a different query: repeat the request's origin, services and view unchanged, or start again without a token",
    );
  }
  return { revision: parsed[2] as number, origin: parsed[3], service: parsed[4] };
}
