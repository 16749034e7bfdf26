import { describe, expect, it } from "vitest";
import { UsageError } from "../../services/process/usage-error.js";
import { parseRegistrarFlags, REGISTRAR_USAGE } from "../../services/registrar/registrar-flags.js";

const parse = (...argv: string[]) => parseRegistrarFlags(["--cluster", "hub", ...argv]);
const PAIR = ["--tls-cert-file", "/svid/cert.pem", "--tls-key-file", "/svid/key.pem"];
const EAST = "spiffe://east.mesh/ns/aether-system/sa/aether-agent";

describe("the registrar's TLS flags", () => {
  it("leave the port plaintext when none is given", () => {
    expect(parse()).toMatchObject({ tls: undefined });
  });

  it("serve TLS without client certificates with a certificate and key alone", () => {
    expect(parse(...PAIR)).toMatchObject({
      tls: {
        certFile: "/svid/cert.pem",
        keyFile: "/svid/key.pem",
        bundleFiles: new Map(),
        authorize: [],
      },
    });
  });

  it("require client certificates of each bundle's trust domain, and parse --authorize", () => {
    const config = parse(
      ...PAIR,
      "--trust-domain-bundle",
      "east.mesh=/bundles/east.pem",
      "--trust-domain-bundle=spiffe://hub.mesh=/bundles/hub.json",
      "--authorize",
      EAST,
      "--authorize=spiffe://hub.mesh/ns/aether-system/*",
    );
    if (config === "help") throw new Error("help");
    expect([...(config.tls?.bundleFiles ?? [])]).toEqual([
      ["east.mesh", "/bundles/east.pem"],
      ["hub.mesh", "/bundles/hub.json"],
    ]);
    expect(config.tls?.authorize).toEqual([
      { kind: "exact", text: EAST },
      {
        kind: "prefix",
        text: "spiffe://hub.mesh/ns/aether-system/*",
        prefix: "spiffe://hub.mesh/ns/aether-system/",
      },
    ]);
  });

  const bad: [string, string[], RegExp][] = [
    [
      "a certificate without its key",
      ["--tls-cert-file", "c.pem"],
      /--tls-cert-file needs --tls-key-file/,
    ],
    [
      "a key without its certificate",
      ["--tls-key-file", "k.pem"],
      /--tls-key-file needs --tls-cert-file/,
    ],
    ["an empty file name", ["--tls-cert-file=", "--tls-key-file", "k.pem"], /must name files/],
    [
      "a bundle on a plaintext port",
      ["--trust-domain-bundle", "east.mesh=e.pem"],
      /--trust-domain-bundle needs --tls-cert-file and --tls-key-file/,
    ],
    ["--authorize on a plaintext port", ["--authorize", EAST], /--authorize needs --tls-cert-file/],
    [
      "--authorize without bundles",
      [...PAIR, "--authorize", EAST],
      /--authorize needs --trust-domain-bundle: without client certificates there is no SPIFFE ID/,
    ],
    [
      "--authorize naming a trust domain no bundle configures",
      [...PAIR, "--trust-domain-bundle", "hub.mesh=h.pem", "--authorize", EAST],
      /--authorize "spiffe:\/\/east.mesh\/ns\/aether-system\/sa\/aether-agent" names trust domain east.mesh, which no --trust-domain-bundle configures.*\(configured: hub.mesh\)/,
    ],
    [
      "an invalid pattern",
      [...PAIR, "--trust-domain-bundle", "east.mesh=e.pem", "--authorize", "spiffe://east.mesh/a*"],
      /--authorize "spiffe:\/\/east.mesh\/a\*": "\*" is allowed only as the whole last segment/,
    ],
    [
      "a bundle value without a trust domain",
      [...PAIR, "--trust-domain-bundle", "e.pem"],
      /--trust-domain-bundle "e.pem" is not TRUST_DOMAIN=PATH/,
    ],
    [
      "a trust domain given twice",
      [
        ...PAIR,
        "--trust-domain-bundle",
        "east.mesh=a.pem",
        "--trust-domain-bundle",
        "east.mesh=b.pem",
      ],
      /names trust domain east.mesh twice/,
    ],
  ];
  for (const [name, argv, message] of bad) {
    it(`refuse ${name}`, () => {
      expect(() => parse(...argv)).toThrow(UsageError);
      expect(() => parse(...argv)).toThrow(message);
    });
  }

  it("are documented in --help", () => {
    for (const flag of [
      "--tls-cert-file PATH",
      "--tls-key-file PATH",
      "--trust-domain-bundle TRUST_DOMAIN=PATH",
      "--authorize PATTERN",
    ]) {
      expect(REGISTRAR_USAGE).toContain(flag);
    }
  });
});
