/** The agent's flags: defaults, every flag, and clear usage errors. */
import { describe, expect, it } from "vitest";
import { parseAgentFlags } from "../../clients/agent/agent-flags.js";

const base = ["--registrar", "http://127.0.0.1:8080", "--cluster", "spoke", "--deps", "shop/a"];

describe("agent flags", () => {
  it("applies defaults", () => {
    expect(parseAgentFlags(base, { nodeName: "node-a", hostname: "host-a" })).toEqual({
      registrar: "http://127.0.0.1:8080",
      cluster: "spoke",
      controlCluster: undefined,
      dependencies: ["shop/a"],
      dependenciesFile: undefined,
      cacheDir: undefined,
      localSource: undefined,
      kubeconfig: undefined,
      outFile: undefined,
      listen: { host: "127.0.0.1", port: 8081 },
      mode: "watch",
      pollIntervalMs: 10_000,
      keepaliveTimeoutMs: 45_000,
      backoffInitialMs: 200,
      backoffMaxMs: 5_000,
      maxVersionSkewMs: 300_000,
      massDelete: { fraction: 0.5, minCount: 3 },
      massDeleteHoldMs: 600_000,
      logLevel: "info",
      originKeysFile: undefined,
      requireSignatures: false,
      agentId: "node-a",
    });
  });

  it("parses everything", () => {
    expect(
      parseAgentFlags([
        "--registrar=http://registrar.aether:8080/",
        "--cluster=spoke-a",
        "--control-cluster=hub",
        "--deps=shop/b, shop/a",
        "--deps=shop/a,pay/ledger",
        "--deps-file=/etc/aether/deps",
        "--cache-dir=/var/cache/aether",
        "--local-source=kubernetes",
        "--kubeconfig=/k",
        "--out=/run/aether/routes.json",
        "--listen=[::1]:0",
        "--mode=poll",
        "--poll-interval=2s",
        "--keepalive-timeout=1m",
        "--backoff-initial=50ms",
        "--backoff-max=5s",
        "--max-version-skew=30s",
        "--mass-delete-threshold=80%",
        "--mass-delete-min=5",
        "--mass-delete-hold=90s",
        "--log-level=debug",
        "--origin-keys=/etc/aether/origin-keys.yaml",
        "--require-signatures",
        "--agent-id=node-7.example",
      ]),
    ).toEqual({
      registrar: "http://registrar.aether:8080",
      cluster: "spoke-a",
      controlCluster: "hub",
      dependencies: ["pay/ledger", "shop/a", "shop/b"],
      dependenciesFile: "/etc/aether/deps",
      cacheDir: "/var/cache/aether",
      localSource: { kind: "kubernetes" },
      kubeconfig: "/k",
      outFile: "/run/aether/routes.json",
      listen: { host: "::1", port: 0 },
      mode: "poll",
      pollIntervalMs: 2000,
      keepaliveTimeoutMs: 60_000,
      backoffInitialMs: 50,
      backoffMaxMs: 5000,
      maxVersionSkewMs: 30_000,
      massDelete: { fraction: 0.8, minCount: 5 },
      massDeleteHoldMs: 90_000,
      logLevel: "debug",
      originKeysFile: "/etc/aether/origin-keys.yaml",
      requireSignatures: true,
      agentId: "node-7.example",
    });
  });

  it("accepts a dependency file alone and a dir: local source", () => {
    expect(
      parseAgentFlags([
        "--registrar",
        "https://r:1",
        "--cluster",
        "c",
        "--deps-file",
        "d",
        "--local-source",
        "dir:/routes",
        "--listen",
        ":9000",
      ]),
    ).toMatchObject({
      dependencies: [],
      dependenciesFile: "d",
      localSource: { kind: "dir", path: "/routes" },
      listen: { host: "0.0.0.0", port: 9000 },
    });
  });

  it("verifies with --origin-keys alone, without requiring signatures", () => {
    expect(parseAgentFlags([...base, "--origin-keys", "keys.json"])).toMatchObject({
      originKeysFile: "keys.json",
      requireSignatures: false,
    });
  });

  it("returns help", () => expect(parseAgentFlags(["-h"])).toBe("help"));

  it("takes the client TLS flags for an https:// registrar", () => {
    const config = parseAgentFlags([
      ...["--registrar", "https://registrar.hub:8443", "--cluster", "east", "--deps", "shop/a"],
      ...["--tls-cert-file", "/svid/cert.pem", "--tls-key-file", "/svid/key.pem"],
      ...[
        "--trust-domain-bundle",
        "hub.mesh=/b/hub.json",
        "--trust-domain-bundle",
        "east.mesh=/b/e.pem",
      ],
      ...["--registrar-spiffe-id", "spiffe://hub.mesh/ns/aether-system/sa/aether-registrar"],
    ]);
    expect(config === "help" ? undefined : config.tls).toEqual({
      certFile: "/svid/cert.pem",
      keyFile: "/svid/key.pem",
      bundleFiles: new Map([
        ["hub.mesh", "/b/hub.json"],
        ["east.mesh", "/b/e.pem"],
      ]),
      registrarSpiffeId: "spiffe://hub.mesh/ns/aether-system/sa/aether-registrar",
    });
  });

  const bad: [string[], RegExp][] = [
    [["--cluster", "c", "--deps", "a/b"], /--registrar is required/],
    [["--registrar", "ftp://x", "--cluster", "c", "--deps", "a/b"], /is not an http\(s\) URL/],
    [["--registrar", "not a url", "--cluster", "c", "--deps", "a/b"], /is not an http\(s\) URL/],
    [["--registrar", "http://r", "--deps", "a/b"], /--cluster is required/],
    [["--registrar", "http://r", "--cluster", "C", "--deps", "a/b"], /--cluster: cluster name "C"/],
    [["--registrar", "http://r", "--cluster", "c"], /give the dependency set with --deps/],
    [
      [...base, "--deps", "Shop/a"],
      /--deps: service "Shop\/a": namespace "Shop" is not a DNS-1123/,
    ],
    [[...base, "--deps", "shop"], /--deps: service "shop" must be "namespace\/name"/],
    [[...base, "--control-cluster", "a_b"], /--control-cluster: cluster name "a_b"/],
    [[...base, "--local-source", "git:x"], /--local-source "git:x" must be dir:PATH or kubernetes/],
    [[...base, "--kubeconfig", "/k"], /--kubeconfig is only used with --local-source kubernetes/],
    [[...base, "--listen", "8081"], /--listen "8081" is not HOST:PORT/],
    [[...base, "--listen", "h:70000"], /is not HOST:PORT/],
    [[...base, "--listen", "::1:80"], /is not HOST:PORT/],
    [[...base, "--mode", "push"], /--mode "push" must be watch or poll/],
    [[...base, "--poll-interval", "often"], /--poll-interval: "often" is not a duration/],
    [[...base, "--keepalive-timeout", "10ms"], /--keepalive-timeout must be at least 100ms/],
    [[...base, "--backoff-initial", "2s", "--backoff-max", "1s"], /--backoff-max must be at least/],
    [[...base, "--log-level", "loud"], /--log-level "loud" must be/],
    [[...base, "--mass-delete-threshold", "half"], /--mass-delete-threshold "half" must be/],
    [[...base, "--mass-delete-min", "0"], /--mass-delete-min "0" must be a whole number/],
    [[...base, "--mass-delete-hold", "soon"], /--mass-delete-hold: "soon" is not a duration/],
    [[...base, "--tls-cert-file", "/c.pem"], /--tls-cert-file need an https:\/\/ registrar/],
    [[...base, "--registrar-spiffe-id", "spiffe://hub.mesh/x"], /need an https:\/\/ registrar/],
    [[...base, "--require-signatures"], /--require-signatures needs --origin-keys PATH/],
    [[...base, "--origin-keys="], /--origin-keys needs a path/],
    [[...base, "--bogus"], /Unknown option '--bogus'/],
    [[...base, "extra"], /Unexpected argument 'extra'/],
  ];
  for (const [argv, message] of bad) {
    it(`rejects ${argv.slice(base.length).join(" ") || argv.join(" ")}`, () =>
      expect(() => parseAgentFlags(argv)).toThrow(message));
  }
});

describe("agent --routes-listen", () => {
  const base = ["--registrar", "http://127.0.0.1:8080", "--cluster", "spoke", "--deps", "shop/a"];
  it.each([
    ["unix:/run/aether/agent/routes.sock", { path: "/run/aether/agent/routes.sock" }],
    ["127.0.0.1:8082", { host: "127.0.0.1", port: 8082 }],
    ["[::1]:0", { host: "::1", port: 0 }],
  ])("takes %s", (value, expected) => {
    expect(parseAgentFlags([...base, "--routes-listen", value])).toMatchObject({
      routesListen: expected,
    });
  });
  it.each([
    ["unix:", /needs a socket path/],
    [`unix:/${"x".repeat(120)}`, /longer than 107 bytes/],
    ["somewhere", /is not unix:PATH or HOST:PORT/],
  ])("refuses %s", (value, message) => {
    expect(() => parseAgentFlags([...base, "--routes-listen", value])).toThrow(message);
  });
  it("leaves /routes on --listen by default", () => {
    expect(parseAgentFlags(base)).toMatchObject({ routesListen: undefined });
  });
});
