import { describe, expect, it } from "vitest";
import {
  buildExplainTarget,
  type ExplainArguments,
  parseHeaderFlag,
  parseTargetUrl,
  serviceOfHost,
} from "../../clients/aetherctl/explain-request.js";
import {
  constantRandom,
  parseRandomFlags,
  seededRandom,
} from "../../clients/aetherctl/random-source.js";
import { UsageError } from "../../services/process/usage-error.js";

function args(extra: Partial<ExplainArguments>): ExplainArguments {
  return {
    positionals: [],
    fromNamespace: "web",
    port: undefined,
    portName: undefined,
    headers: [],
    grpc: undefined,
    ...extra,
  };
}

describe("serviceOfHost", () => {
  it.each([
    ["checkout", "web", "web/checkout"],
    ["checkout.shop", "web", "shop/checkout"],
    ["checkout.shop.svc", "web", "shop/checkout"],
    ["checkout.shop.svc.cluster.local", "web", "shop/checkout"],
    ["checkout.shop.svc.cluster.local.", "web", "shop/checkout"],
    ["checkout.shop.svc.corp.example", "web", "shop/checkout"],
    ["Checkout.Shop", "web", "shop/checkout"],
  ])("%s from %s is %s", (host, caller, want) => {
    expect(serviceOfHost(host, caller)).toBe(want);
  });

  it.each([
    ["checkout.example.com", /cannot tell the service from host/],
    ["10.0.0.1", /is an IP address/],
    ["[::1]", /is an IP address/],
    ["under_score.shop", /not a DNS-1123 label/],
  ])("%s is refused", (host, message) => {
    expect(() => serviceOfHost(host, "web")).toThrow(message);
  });
});

describe("parseHeaderFlag", () => {
  it.each([
    ["x-beta: true", ["x-beta", "true"]],
    ["X-Beta:true", ["X-Beta", "true"]],
    ["x-empty:", ["x-empty", ""]],
    ["authorization: Bearer a:b", ["authorization", "Bearer a:b"]],
  ])("%j", (text, want) => {
    expect(parseHeaderFlag(text)).toEqual(want);
  });

  it.each(["no-colon", ": value", "bad name: v"])("%j is refused", (text) => {
    expect(() => parseHeaderFlag(text)).toThrow(UsageError);
  });
});

describe("parseTargetUrl", () => {
  it("adds http:// to a URL without a scheme", () => {
    expect(parseTargetUrl("checkout.shop:8080/cart").href).toBe("http://checkout.shop:8080/cart");
  });
  it.each([
    ["ftp://checkout.shop/", /only http and https/],
    ["http://", /is not a URL/],
  ])("%s is refused", (text, message) => {
    expect(() => parseTargetUrl(text)).toThrow(message);
  });
});

describe("buildExplainTarget", () => {
  it.each([
    {
      name: "an HTTP request with a port, query and headers",
      input: args({
        positionals: ["GET", "http://checkout.shop:8080/cart?x=1"],
        headers: ["x-beta: true"],
      }),
      want: {
        service: "shop/checkout",
        port: 8080,
        portName: undefined,
        callerNamespace: "web",
        request: {
          kind: "http",
          method: "GET",
          scheme: "http",
          host: "checkout.shop:8080",
          port: 8080,
          path: "/cart?x=1",
          headers: [["x-beta", "true"]],
        },
        summary: "GET http://checkout.shop:8080/cart?x=1",
      },
    },
    {
      name: "no port: 80",
      input: args({ positionals: ["POST", "http://checkout.shop.svc.cluster.local/pay"] }),
      want: expect.objectContaining({ service: "shop/checkout", port: 80 }),
    },
    {
      name: "https without a port: 443",
      input: args({ positionals: ["GET", "https://checkout.shop/"] }),
      want: expect.objectContaining({ port: 443 }),
    },
    {
      name: "--port beats the URL's port; --port-name is kept",
      input: args({
        positionals: ["GET", "http://checkout:9000/"],
        port: "8443",
        portName: "https",
      }),
      want: expect.objectContaining({ service: "web/checkout", port: 8443, portName: "https" }),
    },
    {
      name: "gRPC with only the URL",
      input: args({
        positionals: ["http://ledger.payments:9090"],
        grpc: "payments.v1.Ledger/Append",
        headers: ["x-tenant: a"],
      }),
      want: {
        service: "payments/ledger",
        port: 9090,
        portName: undefined,
        callerNamespace: "web",
        request: {
          kind: "grpc",
          authority: "ledger.payments:9090",
          port: 9090,
          scheme: "http",
          service: "payments.v1.Ledger",
          method: "Append",
          metadata: [["x-tenant", "a"]],
        },
        summary: "gRPC payments.v1.Ledger/Append to ledger.payments:9090",
      },
    },
    {
      name: "gRPC with a leading slash and a METHOD",
      input: args({ positionals: ["POST", "ledger.payments:9090"], grpc: "/pkg.Svc/Do" }),
      want: expect.objectContaining({
        request: expect.objectContaining({ service: "pkg.Svc", method: "Do" }),
      }),
    },
  ])("$name", ({ input, want }) => {
    expect(buildExplainTarget(input)).toEqual(want);
  });

  it.each([
    {
      name: "no namespace",
      input: args({ fromNamespace: undefined }),
      message: /--from-namespace/,
    },
    {
      name: "a bad namespace",
      input: args({ fromNamespace: "Web", positionals: ["GET", "http://a.b/"] }),
      message: /not a namespace name/,
    },
    {
      name: "only a URL",
      input: args({ positionals: ["http://a.b/"] }),
      message: /METHOD and URL/,
    },
    {
      name: "a bad method",
      input: args({ positionals: ["GE T", "http://a.b/"] }),
      message: /not an HTTP method/,
    },
    {
      name: "a bad port",
      input: args({ positionals: ["GET", "http://a.b/"], port: "70000" }),
      message: /--port "70000"/,
    },
    {
      name: "a bad --grpc",
      input: args({ positionals: ["http://a.b/"], grpc: "NoSlash" }),
      message: /service\/method/,
    },
    {
      name: "--grpc without a URL",
      input: args({ positionals: [], grpc: "a.B/C" }),
      message: /needs the URL/,
    },
  ])("$name is a usage error", ({ input, message }) => {
    expect(() => buildExplainTarget(input)).toThrow(message);
  });
});

describe("random sources", () => {
  it("a constant source always returns its value", () => {
    const source = constantRandom(0.25);
    expect([source.next(), source.next()]).toEqual([0.25, 0.25]);
    expect(source.description).toBe("constant 0.25");
  });

  it("a seeded source repeats its sequence for the same seed and stays in [0, 1)", () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const sequence = Array.from({ length: 1000 }, () => a.next());
    expect(Array.from({ length: 1000 }, () => b.next())).toEqual(sequence);
    expect(sequence.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(new Set(sequence).size).toBeGreaterThan(990);
    expect(seededRandom(43).next()).not.toBe(sequence[0]);
  });

  it.each([
    [undefined, undefined, "constant 0"],
    ["0.95", undefined, "constant 0.95"],
    [".5", undefined, "constant 0.5"],
    [undefined, "7", "seeded 7"],
  ])("--random %s --seed-random %s is %s", (random, seed, want) => {
    expect(parseRandomFlags(random, seed).description).toBe(want);
  });

  it.each([
    ["1", undefined, /--random "1"/],
    ["-0.1", undefined, /--random/],
    ["abc", undefined, /--random/],
    [undefined, "-1", /--seed-random/],
    [undefined, "4294967296", /--seed-random/],
    ["0.5", "1", /not both/],
  ])("--random %s --seed-random %s is refused", (random, seed, message) => {
    expect(() => parseRandomFlags(random, seed)).toThrow(message);
  });
});
