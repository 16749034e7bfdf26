import { describe, expect, it } from "vitest";
import {
  AETHERCTL_USAGE,
  COMMAND_USAGE,
  type Command,
  type CommandLine,
  DEFAULT_REGISTRAR,
  parseAetherctlFlags,
  usageOf,
} from "../../clients/aetherctl/aetherctl-flags.js";
import { UsageError } from "../../services/process/usage-error.js";

function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const line: CommandLine = parseAetherctlFlags(argv, env);
  if (line.kind !== "run") throw new Error(`expected a command, got ${JSON.stringify(line)}`);
  return line;
}

/** The command without the explain target and random source (checked elsewhere). */
function plain(command: Command): Record<string, unknown> {
  const { ...rest } = command as unknown as Record<string, unknown>;
  delete rest.target;
  delete rest.random;
  return rest;
}

describe("parseAetherctlFlags: commands", () => {
  it.each([
    {
      argv: ["list"],
      want: { name: "list", services: [], origin: undefined, allOrigins: false },
    },
    {
      argv: ["list", "--origin", "hub", "shop/a", "shop/b"],
      want: { name: "list", services: ["shop/a", "shop/b"], origin: "hub", allOrigins: false },
    },
    {
      argv: ["list", "--all-origins"],
      want: { name: "list", services: [], origin: undefined, allOrigins: true },
    },
    {
      argv: ["get", "shop/checkout"],
      want: { name: "get", service: "shop/checkout", origin: undefined },
    },
    {
      argv: ["get", "--origin", "west", "shop/checkout"],
      want: { name: "get", service: "shop/checkout", origin: "west" },
    },
    {
      argv: ["watch"],
      want: { name: "watch", services: [], allOrigins: false, resume: 0n, keepalives: false },
    },
    {
      argv: ["watch", "shop/a", "--all-origins", "--resume", "42", "--keepalives"],
      want: {
        name: "watch",
        services: ["shop/a"],
        allOrigins: true,
        resume: 42n,
        keepalives: true,
      },
    },
    { argv: ["status"], want: { name: "status", failOnRejections: false } },
    { argv: ["status", "--fail-on-rejections"], want: { name: "status", failOnRejections: true } },
    {
      argv: ["explain", "--from-namespace", "web", "GET", "http://checkout.shop/"],
      want: { name: "explain", origin: undefined, agent: undefined },
    },
    {
      argv: [
        "explain",
        "--agent",
        "http://127.0.0.1:8081/",
        "--from-namespace",
        "web",
        "GET",
        "http://checkout.shop/",
      ],
      want: { name: "explain", origin: undefined, agent: "http://127.0.0.1:8081" },
    },
  ])("$argv", ({ argv, want }) => {
    expect(plain(run(argv).command)).toEqual(want);
  });

  it.each([
    { argv: ["get", "a/b"], env: {}, want: undefined },
    {
      argv: ["get", "a/b", "--origin-keys", "k.yaml"],
      env: {},
      want: { path: "k.yaml", label: "--origin-keys" },
    },
    {
      argv: ["list"],
      env: { AETHER_ORIGIN_KEYS: "e.yaml" },
      want: { path: "e.yaml", label: "$AETHER_ORIGIN_KEYS" },
    },
    {
      argv: ["list", "--origin-keys", "k.yaml"],
      env: { AETHER_ORIGIN_KEYS: "e.yaml" },
      want: { path: "k.yaml", label: "--origin-keys" },
    },
  ])("--origin-keys of $argv with $env", ({ argv, env, want }) => {
    const { command } = run(argv, env);
    expect(command.name === "get" || command.name === "list").toBe(true);
    expect((command as { originKeys?: unknown }).originKeys).toEqual(want);
  });

  it("takes --origin-keys only on get and list", () => {
    expect(() => run(["status", "--origin-keys", "k.yaml"])).toThrow(
      /Unknown option '--origin-keys'/,
    );
  });
});

describe("parseAetherctlFlags: global flags", () => {
  it.each([
    {
      name: "defaults",
      argv: ["status"],
      env: {},
      want: { registrar: DEFAULT_REGISTRAR, output: "table", timeoutMs: 10_000 },
    },
    {
      name: "$AETHER_REGISTRAR",
      argv: ["status"],
      env: { AETHER_REGISTRAR: "http://reg:9000" },
      want: { registrar: "http://reg:9000", output: "table", timeoutMs: 10_000 },
    },
    {
      name: "--registrar beats the environment; a trailing slash is dropped",
      argv: ["--registrar", "https://r.example/", "status"],
      env: { AETHER_REGISTRAR: "http://reg:9000" },
      want: {
        registrar: "https://r.example",
        output: "table",
        timeoutMs: 10_000,
        tls: { bundleFiles: new Map() },
      },
    },
    {
      name: "the TLS flags, before and after the command",
      argv: [
        ...["--registrar", "https://r.example:8443", "--tls-cert-file", "c.pem", "status"],
        ...["--tls-key-file", "k.pem", "--trust-domain-bundle", "hub.mesh=hub.json"],
        ...["--registrar-spiffe-id", "spiffe://hub.mesh/ns/a/sa/registrar"],
      ],
      env: {},
      want: {
        registrar: "https://r.example:8443",
        output: "table",
        timeoutMs: 10_000,
        tls: {
          certFile: "c.pem",
          keyFile: "k.pem",
          bundleFiles: new Map([["hub.mesh", "hub.json"]]),
          registrarSpiffeId: "spiffe://hub.mesh/ns/a/sa/registrar",
        },
      },
    },
    {
      name: "flags after the command, -o json, --timeout",
      argv: ["status", "-o", "json", "--timeout", "1500ms", "--registrar=http://x:1"],
      env: {},
      want: { registrar: "http://x:1", output: "json", timeoutMs: 1_500 },
    },
    {
      name: "--output=json before the command",
      argv: ["--output=json", "list"],
      env: {},
      want: { registrar: DEFAULT_REGISTRAR, output: "json", timeoutMs: 10_000 },
    },
  ])("$name", ({ argv, env, want }) => {
    expect(run(argv, env).global).toEqual(want);
  });
});

describe("parseAetherctlFlags: help", () => {
  it.each([
    [["--help"], undefined],
    [["-h"], undefined],
    [["help"], undefined],
    [["help", "watch"], "watch"],
    [["list", "--help"], "list"],
    [["explain", "-h"], "explain"],
    [["--registrar", "http://x:1", "status", "--help"], "status"],
  ] as const)("%j asks for the help of %s", (argv, command) => {
    expect(parseAetherctlFlags(argv)).toEqual({ kind: "help", command });
  });

  it("has a usage text for every command, and the general one lists them all", () => {
    for (const [name, text] of Object.entries(COMMAND_USAGE)) {
      expect(text).toMatch(new RegExp(`^Usage: aetherctl ${name}`));
      expect(AETHERCTL_USAGE).toContain(`  ${name} `);
      expect(usageOf(name as Command["name"])).toBe(text);
    }
    expect(usageOf(undefined)).toBe(AETHERCTL_USAGE);
  });
});

describe("parseAetherctlFlags: usage errors", () => {
  it.each([
    { argv: [], message: /no command given/, command: undefined },
    { argv: ["lst"], message: /unknown command "lst"/, command: undefined },
    { argv: ["list", "--bogus"], message: /^Unknown option '--bogus'$/, command: "list" },
    { argv: ["list", "Shop"], message: /must be "namespace\/name"/, command: "list" },
    {
      argv: ["list", "--origin", "hub", "--all-origins"],
      message: /either --origin or --all-origins/,
      command: "list",
    },
    { argv: ["list", "--origin", "Hub"], message: /--origin: cluster name "Hub"/, command: "list" },
    { argv: ["get"], message: /exactly one service/, command: "get" },
    { argv: ["get", "a/b", "c/d"], message: /exactly one service/, command: "get" },
    { argv: ["watch", "--resume", "-1"], message: /--resume/, command: "watch" },
    { argv: ["watch", "--resume", "abc"], message: /must be a revision/, command: "watch" },
    { argv: ["status", "extra"], message: /takes no arguments/, command: "status" },
    {
      argv: ["-o", "yaml", "status"],
      message: /-o "yaml" must be table or json/,
      command: undefined,
    },
    {
      argv: ["--registrar", "ftp://x", "status"],
      message: /not an http\(s\) URL/,
      command: undefined,
    },
    {
      argv: ["--registrar", "nope", "status"],
      message: /not an http\(s\) URL/,
      command: undefined,
    },
    {
      argv: ["--timeout", "soon", "status"],
      message: /--timeout: "soon" is not a duration/,
      command: undefined,
    },
    { argv: ["--timeout", "0", "status"], message: /more than 0/, command: undefined },
    {
      argv: ["explain", "GET", "http://a.b/"],
      message: /--from-namespace/,
      command: "explain",
    },
    {
      argv: ["explain", "--from-namespace", "web", "--random", "1", "GET", "http://a.b/"],
      message: /--random "1"/,
      command: "explain",
    },
  ])("$argv", ({ argv, message, command }) => {
    let thrown: unknown;
    try {
      parseAetherctlFlags(argv);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(UsageError);
    expect((thrown as UsageError).message).toMatch(message);
    expect((thrown as UsageError).command).toBe(command);
  });
});
