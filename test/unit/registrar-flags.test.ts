import { describe, expect, it } from "vitest";
import { parseRegistrarFlags } from "../../services/registrar/registrar-flags.js";

describe("registrar flags", () => {
  it("applies defaults", () => {
    expect(parseRegistrarFlags(["--cluster", "hub"])).toMatchObject({
      cluster: "hub",
      host: "127.0.0.1",
      port: 8080,
      store: "memory",
      etcdPrefix: "/aether/v1",
      controlCluster: undefined,
      keepaliveMs: 15_000,
    });
  });
  it("parses everything", () => {
    expect(
      parseRegistrarFlags([
        "--cluster=spoke-a",
        "--listen=[::1]:0",
        "--store=etcd",
        "--etcd-endpoints=http://127.0.0.1:2379, http://127.0.0.1:2380",
        "--etcd-prefix=/x/y/",
        "--control-cluster=hub",
        "--keepalive=2s",
      ]),
    ).toMatchObject({
      cluster: "spoke-a",
      host: "::1",
      port: 0,
      store: "etcd",
      etcdEndpoints: ["http://127.0.0.1:2379", "http://127.0.0.1:2380"],
      etcdPrefix: "/x/y",
      controlCluster: "hub",
      keepaliveMs: 2000,
    });
  });
  it("returns help", () => expect(parseRegistrarFlags(["--help"])).toBe("help"));
  const bad: [string[], RegExp][] = [
    [[], /--cluster is required/],
    [["--cluster", "Hub"], /--cluster: cluster name "Hub" is not a DNS-1123 label/],
    [["--cluster", "hub", "--store", "redis"], /--store "redis" must be memory or etcd/],
    [["--cluster", "hub", "--store", "etcd"], /needs --etcd-endpoints/],
    [["--cluster", "hub", "--listen", "8080"], /--listen "8080" is not HOST:PORT/],
    [["--cluster", "hub", "--listen", "h:99999"], /is not HOST:PORT/],
    [["--cluster", "hub", "--keepalive", "soon"], /--keepalive: "soon" is not a duration/],
    [
      ["--cluster", "hub", "--etcd-prefix", "aether"],
      /--etcd-prefix: store prefix must start with/,
    ],
    [["--cluster", "hub", "--bogus"], /Unknown option '--bogus'/],
    [["--cluster", "hub", "--control-cluster", "a/b"], /--control-cluster: cluster name "a\/b"/],
  ];
  for (const [argv, message] of bad) {
    it(`rejects ${argv.join(" ") || "no flags"}`, () =>
      expect(() => parseRegistrarFlags(argv)).toThrow(message));
  }
});
