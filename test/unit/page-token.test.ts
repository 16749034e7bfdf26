/** Page tokens: authenticated, bound to their query, expiring; table-driven, with an injected clock. */
import { describe, expect, it } from "vitest";
import {
  createPageTokens,
  DEFAULT_PAGE_TOKEN_TTL_MS,
  PageTokenError,
  queryFingerprint,
} from "../../services/registrar/service/page-token.js";

const key = Buffer.alloc(32, 1);
const cursor = { revision: 42, origin: "hub", service: "shop/cart" };

function decodeError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(PageTokenError);
    return (error as Error).message;
  }
  throw new Error("expected the token to be refused");
}

describe("page tokens", () => {
  let now = 1_000_000;
  const tokens = createPageTokens({ key, now: () => now });
  const fingerprint = queryFingerprint(["ListAllConfig", "all", ["shop/cart"]]);

  it("round-trip a cursor for the same query, also on a replica with the same key", () => {
    const token = tokens.encode(fingerprint, cursor);
    expect(tokens.decode(fingerprint, token)).toEqual(cursor);
    const replica = createPageTokens({ key: Buffer.from(key), now: () => now });
    expect(replica.decode(fingerprint, token)).toEqual(cursor);
  });

  const forgeries: [string, (token: string) => string][] = [
    [
      "another key's token",
      () => createPageTokens({ key: Buffer.alloc(32, 2) }).encode(fingerprint, cursor),
    ],
    [
      "a body changed to an older revision, MAC kept",
      (token) => {
        const mac = Buffer.from(token, "base64url").subarray(0, 16);
        const body = Buffer.from(JSON.stringify([2, fingerprint, 1, "hub", "shop/cart", now]));
        return Buffer.concat([mac, body]).toString("base64url");
      },
    ],
    ["a token cut short", (token) => token.slice(0, -4)],
    [
      "the old unsigned format",
      () =>
        Buffer.from(JSON.stringify([1, fingerprint, 1, "hub", "shop/cart"])).toString("base64url"),
    ],
    ["garbage", () => "%%%garbage"],
    [
      "a MAC alone",
      (token) => Buffer.from(token, "base64url").subarray(0, 16).toString("base64url"),
    ],
  ];
  it.each(forgeries)("refuse %s as not ours", (_name, forge) => {
    const forged = forge(tokens.encode(fingerprint, cursor));
    expect(decodeError(() => tokens.decode(fingerprint, forged))).toBe(
      "page_token is not a token returned by this service",
    );
  });

  it("refuse a token of another query", () => {
    const token = tokens.encode(fingerprint, cursor);
    const other = queryFingerprint(["ListAllConfig", "effective", ["shop/cart"]]);
    expect(decodeError(() => tokens.decode(other, token))).toMatch(/belongs to a different query/);
  });

  it("expire after the TTL, and not before", () => {
    const token = tokens.encode(fingerprint, cursor);
    now += DEFAULT_PAGE_TOKEN_TTL_MS;
    expect(tokens.decode(fingerprint, token)).toEqual(cursor);
    now += 1;
    expect(decodeError(() => tokens.decode(fingerprint, token))).toBe(
      "page_token expired (tokens are good for 300 s): start the listing again without a token",
    );
  });

  it("refuse a key that is too short", () => {
    expect(() => createPageTokens({ key: Buffer.alloc(8) })).toThrow(/at least 16 are needed/);
  });

  it("are made with a random key of the process's own by default", () => {
    const a = createPageTokens();
    const b = createPageTokens();
    const token = a.encode(fingerprint, cursor);
    expect(a.decode(fingerprint, token)).toEqual(cursor);
    expect(() => b.decode(fingerprint, token)).toThrow(PageTokenError);
  });
});
