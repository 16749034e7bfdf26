import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  CorsSchema,
  PathModifierType,
  RequestRedirectSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import {
  buildRedirect,
  corsOriginAllowed,
  corsResponseChanges,
  modifyPath,
  type RedirectBase,
} from "../../services/common/evaluator-filters.js";
import {
  applyHeaderChanges,
  headerValue,
  normalizeHeaders,
} from "../../services/common/evaluator-headers.js";
import {
  bestHostname,
  fullMatch,
  hostnameMatches,
  hostWithoutPort,
  parseQuery,
  pathPrefixMatches,
  portOfAuthority,
  splitTarget,
} from "../../services/common/evaluator-match.js";

describe("evaluator: path prefix matching is element-wise", () => {
  const cases: [prefix: string, path: string, matches: boolean][] = [
    ["/foo", "/foo", true],
    ["/foo", "/foo/", true],
    ["/foo", "/foo/bar", true],
    ["/foo", "/foobar", false],
    ["/foo/", "/foo", true],
    ["/foo/", "/foo/bar", true],
    ["/foo/", "/foobar", false],
    ["/", "/anything", true],
    ["/", "/", true],
    ["/foo", "/Foo", false],
    ["/foo/bar", "/foo", false],
  ];
  it.each(cases)("PathPrefix %s vs %s → %s", (prefix, path, matches) => {
    expect(pathPrefixMatches(prefix, path)).toBe(matches);
  });
});

describe("evaluator: regular expressions match the whole value", () => {
  const cases: [pattern: string, value: string, matches: boolean][] = [
    ["/fo", "/foo", false],
    ["/fo+", "/foo", true],
    ["/foo|/bar", "/bar", true],
    ["/foo|/bar", "/foobar", false],
    ["(?i)/FOO", "/foo", true],
    ["[", "[", false],
  ];
  it.each(cases)("%s vs %s → %s", (pattern, value, matches) => {
    expect(fullMatch(pattern, value)).toBe(matches);
  });
});

describe("evaluator: hostnames", () => {
  it.each([
    ["Foo.COM:8080", "foo.com"],
    ["foo.com.", "foo.com"],
    ["[::1]:80", "::1"],
    ["10.0.0.1", "10.0.0.1"],
  ])("host of %s is %s", (authority, host) => {
    expect(hostWithoutPort(authority)).toBe(host);
  });

  it.each([
    ["foo.com:8080", 8080],
    ["foo.com", undefined],
    ["[::1]:443", 443],
  ])("port of %s is %s", (authority, port) => {
    expect(portOfAuthority(authority)).toBe(port);
  });

  it.each([
    ["*.example.com", "foo.example.com", true],
    ["*.example.com", "foo.bar.example.com", true],
    ["*.example.com", "example.com", false],
    ["example.com", "example.com", true],
    ["EXAMPLE.com", "example.com", true],
    ["example.com", "www.example.com", false],
  ])("%s matches %s: %s", (pattern, host, matches) => {
    expect(hostnameMatches(pattern, host)).toBe(matches);
  });

  it("ranks an exact hostname above wildcards, and longer wildcards above shorter", () => {
    expect(bestHostname(["*.com", "*.example.com", "a.example.com"], "a.example.com")).toEqual({
      hostname: "a.example.com",
      rank: [13, 13],
    });
    expect(bestHostname(["*.com", "*.example.com"], "a.example.com")).toEqual({
      hostname: "*.example.com",
      rank: [0, 13],
    });
    expect(bestHostname([], "a.example.com")).toEqual({ hostname: undefined, rank: [0, 0] });
    expect(bestHostname(["b.example.com"], "a.example.com")).toBeUndefined();
  });
});

describe("evaluator: request targets and query strings", () => {
  it("splits path and query, dropping a fragment", () => {
    expect(splitTarget("/a/b?x=1&y=2#frag")).toEqual({ path: "/a/b", query: "x=1&y=2" });
    expect(splitTarget("/a")).toEqual({ path: "/a", query: undefined });
    expect(splitTarget("?x=1")).toEqual({ path: "/", query: "x=1" });
  });

  it("parses parameters case-sensitively, decoded, keeping repeats in order", () => {
    const params = parseQuery("animal=whale&ANIMAL=Whale&animal=dolphin&flag&sp=a%20b");
    expect(params.get("animal")).toEqual(["whale", "dolphin"]);
    expect(params.get("ANIMAL")).toEqual(["Whale"]);
    expect(params.get("flag")).toEqual([""]);
    expect(params.get("sp")).toEqual(["a b"]);
  });
});

describe("evaluator: headers", () => {
  it("normalizes names to lower case and keeps several values in order", () => {
    const headers = normalizeHeaders({ "X-A": "1", "x-a": ["2", "3"], Other: "o" });
    expect(headers).toEqual({ "x-a": ["1", "2", "3"], other: ["o"] });
    expect(headerValue(headers, "X-A")).toBe("1,2,3");
    expect(headerValue(headers, "missing")).toBeUndefined();
    expect(
      normalizeHeaders([
        ["A", "1"],
        ["a", "2"],
      ]),
    ).toEqual({ a: ["1", "2"] });
  });

  it("applies set, add and remove case-insensitively", () => {
    const result = applyHeaderChanges({ "X-Set": "old", "X-Add": "first", "X-Remove": "gone" }, [
      { op: "set", name: "x-set", value: "new" },
      { op: "add", name: "X-ADD", value: "second" },
      { op: "add", name: "x-new", value: "created" },
      { op: "remove", name: "x-remove", value: "" },
    ]);
    expect(result).toEqual({
      "x-set": ["new"],
      "x-add": ["first", "second"],
      "x-new": ["created"],
    });
  });
});

describe("evaluator: path modifiers (the Gateway API ReplacePrefixMatch table)", () => {
  const prefix = (value: string) => ({ type: PathModifierType.REPLACE_PREFIX_MATCH, value });
  const cases: [path: string, matched: string, replacement: string, result: string][] = [
    ["/foo/bar", "/foo", "/xyz", "/xyz/bar"],
    ["/foo/bar", "/foo", "/xyz/", "/xyz/bar"],
    ["/foo/bar", "/foo/", "/xyz", "/xyz/bar"],
    ["/foo/bar", "/foo/", "/xyz/", "/xyz/bar"],
    ["/foo", "/foo", "/xyz", "/xyz"],
    ["/foo/", "/foo", "/xyz", "/xyz/"],
    ["/foo/bar", "/foo", "", "/bar"],
    ["/foo/", "/foo", "", "/"],
    ["/foo", "/foo", "", "/"],
    ["/foo/", "/foo", "/", "/"],
    ["/foo", "/foo", "/", "/"],
    ["/foo/bar", "/", "/xyz", "/xyz/foo/bar"],
  ];
  it.each(cases)("%s with prefix %s replaced by %j → %s", (path, matched, replacement, result) => {
    expect(modifyPath(prefix(replacement) as never, path, matched)).toBe(result);
  });

  it("replaces the full path, and leaves the path alone without a matched prefix", () => {
    const full = { type: PathModifierType.REPLACE_FULL_PATH, value: "/new" };
    expect(modifyPath(full as never, "/old/path", undefined)).toBe("/new");
    expect(modifyPath(prefix("/x") as never, "/old", undefined)).toBe("/old");
    expect(modifyPath(undefined, "/old", "/")).toBe("/old");
  });
});

describe("evaluator: redirect Location defaults", () => {
  const base: RedirectBase = {
    scheme: "http",
    hostname: "req.example",
    port: 80,
    path: "/p",
    query: undefined,
  };
  const cases: {
    name: string;
    redirect: Parameters<typeof create<typeof RequestRedirectSchema>>[1];
    base?: Partial<RedirectBase>;
    location: string;
    status?: number;
  }[] = [
    { name: "everything defaults, status 302", redirect: {}, location: "http://req.example/p" },
    {
      name: "scheme https uses 443, left out",
      redirect: { scheme: "https" },
      location: "https://req.example/p",
    },
    {
      name: "scheme set keeps its well-known port even on another listener port",
      redirect: { scheme: "http" },
      base: { port: 8080 },
      location: "http://req.example/p",
    },
    {
      name: "no scheme, no port: the listener port",
      redirect: { hostname: "x.org" },
      base: { port: 8080 },
      location: "http://x.org:8080/p",
    },
    {
      name: "explicit port 80 with http is left out",
      redirect: { port: 80 },
      base: { port: 8080 },
      location: "http://req.example/p",
    },
    {
      name: "explicit port kept",
      redirect: { port: 8083, statusCode: 301 },
      location: "http://req.example:8083/p",
      status: 301,
    },
    {
      name: "https request, http scheme: port 80 left out",
      redirect: { scheme: "http" },
      base: { scheme: "https", port: 443 },
      location: "http://req.example/p",
    },
    {
      name: "full path replaced, query kept",
      redirect: { path: { type: PathModifierType.REPLACE_FULL_PATH, value: "/new" } },
      base: { query: "a=1" },
      location: "http://req.example/new?a=1",
    },
  ];
  it.each(cases)("$name", ({ redirect, base: overrides, location, status }) => {
    const result = buildRedirect(
      create(RequestRedirectSchema, redirect),
      { ...base, ...overrides },
      "/",
    );
    expect(result.location).toBe(location);
    expect(result.statusCode).toBe(status ?? 302);
  });
});

describe("evaluator: CORS", () => {
  const policy = create(CorsSchema, {
    allowOrigins: ["https://www.foo.com", "https://*.bar.com", "http://local:8080"],
    allowMethods: ["GET", "OPTIONS"],
    allowHeaders: ["x-1"],
    exposeHeaders: ["x-3"],
    allowCredentials: true,
    maxAgeSeconds: 60,
  });
  it.each([
    ["https://www.foo.com", true],
    ["https://www.foo.com:443", true],
    ["http://www.foo.com", false],
    ["https://a.b.bar.com", true],
    ["https://bar.com", false],
    ["http://local:8080", true],
    ["http://local", false],
    ["not an origin", false],
  ])("origin %s allowed: %s", (origin, allowed) => {
    expect(corsOriginAllowed(policy, origin)).toBe(allowed);
  });

  it("answers a credentialed preflight with the policy's lists", () => {
    const changes = corsResponseChanges(policy, "https://www.foo.com", true, {});
    expect(Object.fromEntries(changes.map((c) => [c.name, c.value]))).toEqual({
      "access-control-allow-origin": "https://www.foo.com",
      "access-control-allow-methods": "GET, OPTIONS",
      "access-control-allow-headers": "x-1",
      "access-control-expose-headers": "x-3",
      "access-control-max-age": "60",
      "access-control-allow-credentials": "true",
    });
  });

  it("answers wildcards with * without credentials, and echoes the request with them", () => {
    const wild = create(CorsSchema, {
      allowOrigins: ["*"],
      allowMethods: ["*"],
      allowHeaders: ["*"],
    });
    const request = {
      "access-control-request-method": ["PUT"],
      "access-control-request-headers": ["x-a, x-b"],
    };
    const plain = corsResponseChanges(wild, "https://o.com", true, request);
    expect(Object.fromEntries(plain.map((c) => [c.name, c.value]))).toEqual({
      "access-control-allow-origin": "*",
      "access-control-allow-methods": "*",
      "access-control-allow-headers": "*",
    });
    const credentialed = corsResponseChanges(
      { ...wild, allowCredentials: true },
      "https://o.com",
      true,
      request,
    );
    expect(Object.fromEntries(credentialed.map((c) => [c.name, c.value]))).toEqual({
      "access-control-allow-origin": "https://o.com",
      "access-control-allow-methods": "PUT",
      "access-control-allow-headers": "x-a, x-b",
      "access-control-allow-credentials": "true",
    });
  });
});
