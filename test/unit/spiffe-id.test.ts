import { describe, expect, it } from "vitest";
import {
  type AuthorizePattern,
  isAuthorized,
  matchesAuthorizePattern,
  parseAuthorizePattern,
} from "../../services/common/spiffe-authorize.js";
import { checkTrustDomain, parseSpiffeId, type SpiffeId } from "../../services/common/spiffe-id.js";

function id(text: string): SpiffeId {
  const parsed = parseSpiffeId(text);
  if (parsed.id === undefined) throw new Error(parsed.error);
  return parsed.id;
}

function pattern(text: string): AuthorizePattern {
  const parsed = parseAuthorizePattern(text);
  if (parsed.pattern === undefined) throw new Error(parsed.error);
  return parsed.pattern;
}

describe("SPIFFE ID parsing", () => {
  const valid: [string, string, string][] = [
    [
      "spiffe://east.mesh/ns/aether-system/sa/aether-agent",
      "east.mesh",
      "/ns/aether-system/sa/aether-agent",
    ],
    ["spiffe://east.mesh", "east.mesh", ""],
    ["spiffe://a_b-c.9/x", "a_b-c.9", "/x"],
    ["spiffe://10.0.0.1/Path.With-Upper_case", "10.0.0.1", "/Path.With-Upper_case"],
    ["spiffe://td/a/...b/c..", "td", "/a/...b/c.."],
    [`spiffe://${"a".repeat(255)}/x`, "a".repeat(255), "/x"],
    [`spiffe://td/${"p".repeat(2048 - "spiffe://td/".length)}`, "td", `/${"p".repeat(2036)}`],
  ];
  for (const [text, trustDomain, path] of valid) {
    it(`accepts ${text.slice(0, 60)}`, () => {
      expect(parseSpiffeId(text)).toEqual({ id: { trustDomain, path, text } });
    });
  }

  const invalid: [string, RegExp][] = [
    ["", /must look like spiffe:\/\/trust-domain\/path/],
    ["east.mesh/ns/a", /must look like spiffe:\/\//],
    ["https://east.mesh/ns/a", /the scheme must be "spiffe"/],
    ["SPIFFE://east.mesh/ns/a", /the scheme must be "spiffe"/],
    ["spiffe:east.mesh/a", /the scheme must be "spiffe"/],
    ["spiffe:///ns/a", /the trust domain is missing/],
    ["spiffe://", /the trust domain is missing/],
    ["spiffe://East.Mesh/a", /trust domain "East.Mesh" must be lower-case/],
    ["spiffe://east.mesh:443/a", /must not have a user, password or port/],
    ["spiffe://user@east.mesh/a", /must not have a user, password or port/],
    ["spiffe://east%2emesh/a", /trust domain "east%2emesh" must not be percent-encoded/],
    ["spiffe://east mesh/a", /may contain only lower-case letters, digits/],
    ["spiffe://[::1]/a", /may contain only lower-case letters, digits/],
    ["spiffe://ëast/a", /may contain only lower-case letters/],
    [`spiffe://${"a".repeat(256)}/x`, /is longer than 255 characters/],
    ["spiffe://east.mesh/ns/a?x=1", /must not have a query \(\?\) or fragment/],
    ["spiffe://east.mesh/ns/a#frag", /must not have a query \(\?\) or fragment/],
    ["spiffe://east.mesh/", /path "\/" must not end with "\/"/],
    ["spiffe://east.mesh/ns/a/", /must not end with "\/"/],
    ["spiffe://east.mesh//a", /has an empty segment/],
    ["spiffe://east.mesh/ns/./a", /must not have a "\." or "\.\." segment/],
    ["spiffe://east.mesh/ns/../a", /must not have a "\." or "\.\." segment/],
    ["spiffe://east.mesh/ns/a%20b", /path "\/ns\/a%20b" must not be percent-encoded/],
    ["spiffe://east.mesh/ns/a b", /segment "a b" may contain only letters, digits/],
    ["spiffe://east.mesh/ns/*", /segment "\*" may contain only/],
    [`spiffe://td/${"p".repeat(2037)}`, /longer than 2048 characters/],
  ];
  for (const [text, message] of invalid) {
    it(`refuses ${JSON.stringify(text.slice(0, 60))}`, () => {
      const parsed = parseSpiffeId(text);
      expect(parsed.id).toBeUndefined();
      expect(parsed.error).toMatch(message);
      expect(parsed.error).toMatch(/is not a SPIFFE ID: /);
    });
  }

  it("checks bare trust domain names", () => {
    expect(checkTrustDomain("hub.mesh")).toBeUndefined();
    expect(checkTrustDomain("")).toMatch(/missing/);
    expect(checkTrustDomain("Hub")).toMatch(/lower-case/);
    expect(checkTrustDomain("hub/x")).toMatch(/may contain only/);
  });
});

describe("--authorize patterns", () => {
  it("parses exact IDs and /* prefixes", () => {
    expect(pattern("spiffe://east.mesh/ns/a/sa/b")).toEqual({
      kind: "exact",
      text: "spiffe://east.mesh/ns/a/sa/b",
    });
    expect(pattern("spiffe://east.mesh/*")).toEqual({
      kind: "prefix",
      text: "spiffe://east.mesh/*",
      prefix: "spiffe://east.mesh/",
    });
    expect(pattern("spiffe://east.mesh/ns/a/*")).toMatchObject({
      prefix: "spiffe://east.mesh/ns/a/",
    });
  });

  const invalid: [string, RegExp][] = [
    ["spiffe://east.mesh", /names a trust domain.*"spiffe:\/\/east.mesh\/\*"/],
    ["spiffe://*", /"\*" stands for path segments, not a trust domain/],
    ["spiffe://east.mesh/ns/*/sa/b", /"\*" is allowed only as the whole last segment/],
    ["spiffe://east.mesh/ns/a*", /"\*" is allowed only as the whole last segment/],
    ["spiffe://east.mesh/**", /"\*" is allowed only/],
    ["spiffe://East.mesh/*", /--authorize "spiffe:\/\/East.mesh\/\*": .*must be lower-case/],
    ["spiffe:///*", /the trust domain is missing/],
    ["east.mesh/*", /is not a SPIFFE ID/],
    ["spiffe://east.mesh/ns/a/", /must not end with "\/"/],
    ["", /is not a SPIFFE ID/],
  ];
  for (const [text, message] of invalid) {
    it(`refuses ${JSON.stringify(text)}`, () => {
      const parsed = parseAuthorizePattern(text);
      expect(parsed.pattern).toBeUndefined();
      expect(parsed.error).toMatch(message);
    });
  }

  const matches: [string, string, boolean][] = [
    ["spiffe://east.mesh/ns/a/sa/b", "spiffe://east.mesh/ns/a/sa/b", true],
    ["spiffe://east.mesh/ns/a/sa/b", "spiffe://east.mesh/ns/a/sa/bb", false],
    ["spiffe://east.mesh/ns/a/sa/b", "spiffe://east.mesh/ns/a/sa", false],
    ["spiffe://east.mesh/ns/a/sa/b", "spiffe://west.mesh/ns/a/sa/b", false],
    ["spiffe://east.mesh/*", "spiffe://east.mesh/anything", true],
    ["spiffe://east.mesh/*", "spiffe://east.mesh/ns/a/sa/b", true],
    ["spiffe://east.mesh/*", "spiffe://east.mesh", false],
    ["spiffe://east.mesh/*", "spiffe://east.mesh.evil/x", false],
    ["spiffe://east.mesh/*", "spiffe://west.mesh/x", false],
    ["spiffe://east.mesh/ns/a/*", "spiffe://east.mesh/ns/a/sa/b", true],
    ["spiffe://east.mesh/ns/a/*", "spiffe://east.mesh/ns/a", false],
    ["spiffe://east.mesh/ns/a/*", "spiffe://east.mesh/ns/ab/sa/b", false],
    ["spiffe://east.mesh/ns/a/*", "spiffe://east.mesh/ns/A/sa/b", false],
  ];
  for (const [p, candidate, expected] of matches) {
    it(`${p} ${expected ? "matches" : "does not match"} ${candidate}`, () => {
      expect(matchesAuthorizePattern(id(candidate), pattern(p))).toBe(expected);
    });
  }

  it("allows an ID matching any pattern, and every ID when no pattern was given", () => {
    const patterns = [pattern("spiffe://east.mesh/ns/a/*"), pattern("spiffe://hub.mesh/x")];
    expect(isAuthorized(id("spiffe://hub.mesh/x"), patterns)).toBe(true);
    expect(isAuthorized(id("spiffe://east.mesh/ns/a/y"), patterns)).toBe(true);
    expect(isAuthorized(id("spiffe://east.mesh/ns/b/y"), patterns)).toBe(false);
    expect(isAuthorized(id("spiffe://west.mesh/ns/b/y"), [])).toBe(true);
  });
});
