/**
 * Where a page of a listing starts and what it holds: the cursor search in
 * store key order (which is not origin-then-service order) and in service
 * order, the page slices of a kept window, and the next page's token.
 */
import { describe, expect, it } from "vitest";
import {
  firstAfter,
  firstAfterKey,
  type ListingPosition,
  nextToken,
  pageOf,
  startsAtOrBefore,
  windowPage,
} from "../../services/registrar/service/listing-cursor.js";
import { createPageTokens } from "../../services/registrar/service/page-token.js";

const PREFIX = "/p";
const at = (origin: string, service: string): ListingPosition => ({ origin, service });

/**
 * Positions in store key order: origin `b-1` sorts before `b` (`-` before
 * `/`), and within an origin `a/z` before `a/b` (by their base64url segments
 * `YS96` and `YS9i`), the reverse of plain string order in both.
 */
const KEY_ORDERED = [
  at("b-1", "a/z"),
  at("b-1", "a/b"),
  at("b-1", "a/bc"),
  at("b", "a/z"),
  at("b", "a/b"),
];

describe("firstAfterKey", () => {
  const cases: [string, ListingPosition, number][] = [
    ["the first entry", at("b-1", "a/z"), 1],
    ["an entry in the middle", at("b-1", "a/b"), 2],
    ["the last entry of an origin", at("b-1", "a/bc"), 3],
    ["the last entry", at("b", "a/b"), 5],
    ["a position between two entries", at("b", "a/a"), 4],
    ["a position after an origin's entries", at("b-1", "a/c"), 3],
    ["a position after every key of an origin that sorts first", at("b-1", "zz/zz"), 3],
    ["an origin before every entry", at("a", "z/z"), 0],
    ["an origin after every entry", at("c", "a/a"), 5],
  ];
  for (const [name, after, expected] of cases) {
    it(`finds the entry after ${name}`, () => {
      expect(firstAfterKey(PREFIX, KEY_ORDERED, after)).toBe(expected);
    });
  }
  it("finds nothing in no entries", () =>
    expect(firstAfterKey(PREFIX, [], at("b", "a/a"))).toBe(0));
});

describe("startsAtOrBefore", () => {
  const cases: [string, ListingPosition | undefined, ListingPosition, boolean][] = [
    ["a window from the beginning", undefined, at("c", "a/a"), true],
    ["a window after the same position", at("b", "a/z"), at("b", "a/z"), true],
    ["a window after an earlier key", at("b-1", "a/z"), at("b", "a/z"), true],
    ["a window after a later key", at("b", "a/z"), at("b-1", "a/z"), false],
    ["a window after a later key of the same origin", at("b", "a/b"), at("b", "a/z"), false],
  ];
  for (const [name, windowAfter, after, expected] of cases) {
    it(`says ${expected} for ${name}`, () => {
      expect(startsAtOrBefore(PREFIX, { after: windowAfter }, after)).toBe(expected);
    });
  }
});

describe("firstAfter (service order)", () => {
  const services = ["a/b", "a/z", "b/a", "b-1/a"].sort().map((service) => ({ service }));
  const cases: [string, number][] = [
    ["", 0],
    ["a/a", 0],
    ["a/b", 1],
    ["a/c", 1],
    ["a/z", 2],
    [services[2]?.service as string, 3],
    ["z/z", 4],
  ];
  for (const [service, expected] of cases) {
    it(`finds the entry after ${JSON.stringify(service)} at ${expected}`, () => {
      expect(firstAfter(services, service)).toBe(expected);
    });
  }
  it("finds nothing in no entries", () => expect(firstAfter([], "a/b")).toBe(0));
});

describe("pageOf", () => {
  const entries = [1, 2, 3, 4, 5];
  const cases: [string, number, number, boolean, number[], boolean][] = [
    ["a first page", 0, 2, false, [1, 2], true],
    ["a middle page", 2, 2, false, [3, 4], true],
    ["the last page", 4, 2, false, [5], false],
    ["a page that ends with the entries", 3, 2, false, [4, 5], false],
    ["a page that ends with the entries of a listing that goes on", 3, 2, true, [4, 5], true],
    ["a page larger than the entries", 0, 10, false, [1, 2, 3, 4, 5], false],
    ["a page past the entries", 5, 2, false, [], false],
  ];
  for (const [name, start, size, more, expected, expectedMore] of cases) {
    it(`slices ${name}`, () => {
      expect(pageOf(entries, start, size, more)).toEqual({
        entries: expected,
        more: expectedMore,
      });
    });
  }
});

describe("windowPage", () => {
  const window = (after: ListingPosition | undefined, more: boolean) => ({
    entries: KEY_ORDERED,
    more,
    after,
  });
  const cases: [
    string,
    ReturnType<typeof window>,
    ListingPosition,
    number,
    { entries: ListingPosition[]; more: boolean } | undefined,
  ][] = [
    [
      "a page inside a window from the beginning",
      window(undefined, true),
      at("b-1", "a/z"),
      2,
      { entries: KEY_ORDERED.slice(1, 3), more: true },
    ],
    [
      "a page that ends with the window, the listing going on",
      window(undefined, true),
      at("b-1", "a/bc"),
      2,
      { entries: KEY_ORDERED.slice(3, 5), more: true },
    ],
    [
      "the last page of a window that ends the listing",
      window(undefined, false),
      at("b-1", "a/bc"),
      5,
      { entries: KEY_ORDERED.slice(3, 5), more: false },
    ],
    [
      "an exact last page of a window that ends the listing",
      window(undefined, false),
      at("b-1", "a/bc"),
      2,
      { entries: KEY_ORDERED.slice(3, 5), more: false },
    ],
    [
      "no page past a window the listing goes on after",
      window(undefined, true),
      at("b-1", "a/bc"),
      3,
      undefined,
    ],
    [
      "no page before a window's start",
      window(at("b", "a/z"), false),
      at("b-1", "a/b"),
      1,
      undefined,
    ],
    [
      "a page at a window's start",
      window(at("b-1", "a/bc"), false),
      at("b-1", "a/bc"),
      1,
      { entries: [at("b", "a/z")], more: true },
    ],
  ];
  for (const [name, kept, after, pageSize, expected] of cases) {
    it(`serves ${name}`, () => {
      expect(windowPage(PREFIX, kept, after, pageSize)).toEqual(expected);
    });
  }
});

describe("nextToken", () => {
  const tokens = createPageTokens({ key: Buffer.alloc(32, 7), now: () => 1_000 });
  const fingerprint = "fp";
  it("is empty on the last page and after an empty page", () => {
    expect(nextToken(tokens, fingerprint, 9, at("b", "a/z"), false)).toBe("");
    expect(nextToken(tokens, fingerprint, 9, undefined, true)).toBe("");
  });
  const cases: [string, boolean, ListingPosition][] = [
    ["in key order, the last entry's origin and service", false, at("b", "a/z")],
    ["by service only, the last entry's service", true, at("", "a/z")],
  ];
  for (const [name, byServiceOnly, expected] of cases) {
    it(`carries the revision and, ${name}`, () => {
      const token = nextToken(tokens, fingerprint, 9, at("b", "a/z"), true, byServiceOnly);
      expect(tokens.decode(fingerprint, token)).toEqual({ revision: 9, ...expected });
    });
  }
  it("is the token format of page-token.ts, byte for byte: a MAC, then the body", () => {
    const token = nextToken(tokens, fingerprint, 9, at("b", "a/z"), true);
    const bytes = Buffer.from(token, "base64url");
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(bytes.subarray(16).toString()).toBe('[2,"fp",9,"b","a/z",1000]');
  });
});
