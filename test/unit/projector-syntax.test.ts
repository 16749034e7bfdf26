import { describe, expect, it } from "vitest";
import {
  compileFullMatch,
  isCorsOrigin,
  isGrpcMethodName,
  isGrpcServiceName,
  isHeaderName,
  isRouteHostname,
  parseGatewayDuration,
  pathValueProblem,
  regexProblem,
} from "../../services/common/projector-syntax.js";

describe("regexProblem: what RE2 accepts", () => {
  const valid = [
    "/api/[0-9]+",
    "^/v[12]/.*$",
    "(foo|bar)baz?",
    "a{2,5}",
    "a{1000}",
    "(?:x)+",
    "(?<name>x)",
    "(?P<name>x)",
    "(?i)abc",
    "(?s).",
    "[[:alpha:]]",
    "\\Aabc\\z",
    "\\Qa.b\\E",
    "\\pL",
    "\\x{41}",
    "[]a]",
    "\\d\\w\\s\\.\\*\\/",
    "\\bword\\b",
    "\\x41",
    "[a-z\\-_]",
    "[^abc]",
    "a*?",
    "/(a+)+$",
    "",
  ];
  for (const pattern of valid) {
    it(`accepts ${JSON.stringify(pattern)}`, () => expect(regexProblem(pattern)).toBeUndefined());
  }
  const bad: [string, RegExp][] = [
    ["(?=x)", /not RE2 syntax: invalid or unsupported Perl syntax: `\(\?=`/],
    ["(?!x)", /invalid or unsupported Perl syntax/],
    ["(?<=x)y", /not RE2 syntax: invalid named capture/],
    ["(?<!x)y", /not RE2 syntax: invalid named capture/],
    ["(a)\\1", /invalid escape sequence: `\\1`/],
    ["(?<n>a)\\k<n>", /invalid escape sequence: `\\k`/],
    ["\\u0041", /invalid escape sequence/],
    ["[\\b]", /invalid escape sequence/],
    ["a{1001}", /invalid repeat count/],
    ["a{2,1001}", /invalid repeat count/],
    ["((a{100}){100}){100}", /invalid repeat count/],
    ["a**", /invalid nested repetition operator/],
    ["(a", /missing closing \)/],
    ["a)|(b", /unexpected \)/],
    ["*a", /missing argument to repetition operator/],
    ["abc\\", /trailing backslash/],
  ];
  for (const [pattern, problem] of bad) {
    it(`rejects ${JSON.stringify(pattern)}`, () => expect(regexProblem(pattern)).toMatch(problem));
  }
  it("compiles for a full match", () => {
    const re = compileFullMatch("/api/[0-9]+|/health");
    expect(re.test("/api/12")).toBe(true);
    expect(re.test("/health")).toBe(true);
    expect(re.test("/api/12/x")).toBe(false);
    expect(re.test("x/health")).toBe(false);
    expect(() => compileFullMatch("(a")).toThrow(SyntaxError);
  });
  it("matches a pattern that backtracks exponentially in linear time", () => {
    // A backtracking engine takes about 2^n steps here: n = 5000 never finishes.
    const path = `/${"a".repeat(5000)}b`;
    expect(compileFullMatch("/(a+)+$").test(path)).toBe(false);
    expect(compileFullMatch("/(a+)+b").test(path)).toBe(true);
  });
});

describe("parseGatewayDuration (GEP-2257 test vectors)", () => {
  const valid: [string, number][] = [
    ["0h", 0],
    ["0s", 0],
    ["0h0m0s", 0],
    ["1h", 3_600_000],
    ["30m", 1_800_000],
    ["10s", 10_000],
    ["500ms", 500],
    ["2h30m", 9_000_000],
    ["150m", 9_000_000],
    ["7230s", 7_230_000],
    ["1h30m10s", 5_410_000],
    ["10s30m1h", 5_410_000],
    ["100ms200ms300ms", 600],
    ["01h", 3_600_000],
    ["99999h", 99_999 * 3_600_000],
  ];
  for (const [text, millis] of valid) {
    it(`parses ${text}`, () => expect(parseGatewayDuration(text)).toBe(millis));
  }
  for (const text of [
    "1",
    "1m1",
    "1d",
    "1h30m10s20ms50h",
    "999999h",
    "1.5h",
    "-15m",
    "",
    "0",
    " 1s",
  ]) {
    it(`rejects ${JSON.stringify(text)}`, () => expect(parseGatewayDuration(text)).toBeUndefined());
  }
});

describe("names and paths", () => {
  it("checks route hostnames", () => {
    expect(isRouteHostname("example.com")).toBe(true);
    expect(isRouteHostname("*.example.com")).toBe(true);
    expect(isRouteHostname("Example.com")).toBe(false);
    expect(isRouteHostname("a.*.com")).toBe(false);
    expect(isRouteHostname("10.0.0.1:80")).toBe(false);
    expect(isRouteHostname(`${"a".repeat(254)}`)).toBe(false);
  });
  it("checks header names", () => {
    expect(isHeaderName("X-Forwarded-For")).toBe(true);
    expect(isHeaderName("bad header")).toBe(false);
    expect(isHeaderName(":authority")).toBe(false);
    expect(isHeaderName("x".repeat(257))).toBe(false);
  });
  it("checks paths like the CRD", () => {
    expect(pathValueProblem("/a/b")).toBeUndefined();
    expect(pathValueProblem("/%20")).toBeUndefined();
    expect(pathValueProblem("a")).toMatch(/starting with '\/'/);
    expect(pathValueProblem("/a//b")).toMatch(/"\/\/"/);
    expect(pathValueProblem("/a/./b")).toMatch(/"\/\.\/"/);
    expect(pathValueProblem("/a/%2F")).toMatch(/%2F/);
    expect(pathValueProblem("/a#x")).toMatch(/#/);
    expect(pathValueProblem("/a/..")).toMatch(/must not end/);
    expect(pathValueProblem("/a b")).toMatch(/characters/);
  });
  it("checks gRPC names", () => {
    expect(isGrpcServiceName("grpc.health.v1.Health")).toBe(true);
    expect(isGrpcServiceName(".pkg.Svc")).toBe(true);
    expect(isGrpcServiceName("pkg/Svc")).toBe(false);
    expect(isGrpcMethodName("Check")).toBe(true);
    expect(isGrpcMethodName("Check.Me")).toBe(false);
  });
  it("checks CORS origins", () => {
    expect(isCorsOrigin("*")).toBe(true);
    expect(isCorsOrigin("https://www.foo.com")).toBe(true);
    expect(isCorsOrigin("https://*.bar.com:8443")).toBe(true);
    expect(isCorsOrigin("ftp://foo.com")).toBe(false);
    expect(isCorsOrigin("foo.com")).toBe(false);
  });
});
