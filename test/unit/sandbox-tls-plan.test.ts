/**
 * The sandbox's mutual-TLS plan, table-driven: the `--tls`, `--plaintext`
 * and `--pki-dir` flags, the port plan with the registrars' admin ports,
 * whom each registrar authorizes, and the host names a serving certificate
 * carries for curl and buf.
 */
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { UsageError } from "../../services/process/usage-error.js";
import { parseSandboxFlags, type SandboxConfig } from "../../services/sandbox/sandbox-flags.js";
import {
  authorizedIds,
  OPERATOR_ID,
  sandboxSvids,
  servingSans,
} from "../../services/sandbox/sandbox-identities.js";
import { sandboxPorts } from "../../services/sandbox/sandbox-topology.js";

const ROOT = resolve(import.meta.dirname, "../..");

describe("the sandbox's TLS and signing flags", () => {
  const cases: [string[], Partial<SandboxConfig>][] = [
    [[], { tls: true, pkiDir: resolve(ROOT, ".sandbox/pki") }],
    [["--tls"], { tls: true, pkiDir: resolve(ROOT, ".sandbox/pki") }],
    [["--plaintext"], { tls: false }],
    [["--pki-dir", "some/where"], { tls: true, pkiDir: resolve("some/where") }],
    [[], { signingDir: resolve(ROOT, ".sandbox/signing") }],
    [["--plaintext"], { signingDir: resolve(ROOT, ".sandbox/signing") }],
    [["--signing-dir", "keys"], { signingDir: resolve("keys") }],
    [["--unsigned"], { signingDir: undefined }],
  ];
  it.each(cases)("%j gives %j", (argv, expected) => {
    expect(parseSandboxFlags(argv)).toMatchObject(expected);
  });

  const refused: [string[], RegExp][] = [
    [["--tls", "--plaintext"], /--tls and --plaintext contradict each other/],
    [["--plaintext", "--pki-dir", "x"], /--pki-dir is only used with TLS/],
    [["--pki-dir", ""], /--pki-dir needs a directory/],
    [["--signing-dir", ""], /--signing-dir needs a directory/],
    [["--unsigned", "--signing-dir", "x"], /--signing-dir is only used when signing/],
  ];
  it.each(refused)("%j is a usage error", (argv, message) => {
    expect(() => parseSandboxFlags(argv)).toThrow(UsageError);
    expect(() => parseSandboxFlags(argv)).toThrow(message);
  });
});

describe("the sandbox's port plan", () => {
  it("puts the registrars' admin ports at N+100..N+102, clear of every other port", () => {
    const ports = sandboxPorts(8080);
    expect([...ports.admin]).toEqual([
      ["hub", 8180],
      ["east", 8181],
      ["west", 8182],
    ]);
    const all = [ports.hub, ...ports.registrars.values(), ...ports.agents.values()];
    all.push(...ports.admin.values());
    expect(new Set(all).size).toBe(all.length);
  });

  it("gives free ports (0) everywhere for base 0", () => {
    expect([...sandboxPorts(0).admin.values()]).toEqual([0, 0, 0]);
    expect(sandboxPorts(0).console).toBe(0);
  });

  it("puts the console at N-1010 (7070, aetherctl dashboard's default, for 8080), clear of every other port", () => {
    for (const base of [8080, 1011, 64533]) {
      const ports = sandboxPorts(base);
      const all = [ports.hub, ...ports.registrars.values(), ...ports.agents.values()];
      all.push(...ports.admin.values(), ports.console);
      expect(new Set(all).size).toBe(all.length);
      expect(ports.console).toBe(base - 1010);
    }
    expect(() => parseSandboxFlags(["--base-port", "1010"])).toThrow(/from 1011 to 64533/);
    expect(parseSandboxFlags(["--base-port", "1011"])).toMatchObject({ basePort: 1011 });
  });
});

describe("the sandbox's identities", () => {
  it("has a registrar SVID per cluster, an agent SVID per spoke, and the operator's", () => {
    const svids = sandboxSvids(["hub", "east", "west"], ["east", "west"]);
    expect(svids.map((s) => [s.name, s.id, s.serves])).toEqual([
      ["hub-registrar", "spiffe://hub.mesh/ns/aether-system/sa/aether-registrar", true],
      ["east-registrar", "spiffe://east.mesh/ns/aether-system/sa/aether-registrar", true],
      ["west-registrar", "spiffe://west.mesh/ns/aether-system/sa/aether-registrar", true],
      ["east-agent", "spiffe://east.mesh/ns/aether-system/sa/aether-agent", false],
      ["west-agent", "spiffe://west.mesh/ns/aether-system/sa/aether-agent", false],
      ["operator", OPERATOR_ID, false],
    ]);
  });

  it("east's registrar authorizes east's agent, every registrar and the operator, not west's agent", () => {
    const ids = authorizedIds("east", ["hub", "east", "west"]);
    expect(ids).toEqual([
      "spiffe://east.mesh/ns/aether-system/sa/aether-agent",
      "spiffe://hub.mesh/ns/aether-system/sa/aether-registrar",
      "spiffe://east.mesh/ns/aether-system/sa/aether-registrar",
      "spiffe://west.mesh/ns/aether-system/sa/aether-registrar",
      "spiffe://hub.mesh/ns/aether-system/sa/aether-operator",
    ]);
    expect(ids).not.toContain("spiffe://west.mesh/ns/aether-system/sa/aether-agent");
  });

  const loopback = ["DNS:localhost", "IP:127.0.0.1", "IP:::1"];
  const hosts: [string, string[]][] = [
    ["127.0.0.1", loopback],
    ["::1", loopback],
    ["0.0.0.0", loopback],
    ["::", loopback],
    ["10.1.2.3", [...loopback, "IP:10.1.2.3"]],
    ["fd00::5", [...loopback, "IP:fd00::5"]],
    ["sandbox.example", [...loopback, "DNS:sandbox.example"]],
  ];
  it.each(hosts)("a registrar listening on %s names %j", (host, sans) => {
    expect(servingSans(host)).toEqual(sans);
  });
});
