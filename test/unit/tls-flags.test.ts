import { describe, expect, it } from "vitest";
import {
  parseAuthorizeFlags,
  parseSpiffeIdFlag,
  parseTrustDomainBundleFlag,
  parseTrustDomainBundleFlags,
} from "../../services/process/tls-flags.js";
import { UsageError } from "../../services/process/usage-error.js";

describe("--trust-domain-bundle", () => {
  const valid: [string, string, string][] = [
    ["east.mesh=/run/bundles/east.pem", "east.mesh", "/run/bundles/east.pem"],
    ["spiffe://hub.mesh=bundle.json", "hub.mesh", "bundle.json"],
    ["td=a=b.pem", "td", "a=b.pem"],
  ];
  for (const [value, trustDomain, path] of valid) {
    it(`parses ${value}`, () => {
      expect(parseTrustDomainBundleFlag(value)).toEqual({ trustDomain, path });
    });
  }

  const invalid: [string, RegExp][] = [
    ["/run/bundles/east.pem", /"\/run\/bundles\/east.pem" is not TRUST_DOMAIN=PATH/],
    ["=east.pem", /the trust domain is missing/],
    ["East.mesh=east.pem", /trust domain "East.mesh" must be lower-case/],
    ["east.mesh:8443=east.pem", /must not have a user, password or port/],
    ["spiffe://east.mesh/ns=east.pem", /may contain only lower-case letters/],
    ["east.mesh=", /the bundle's path is missing/],
  ];
  for (const [value, message] of invalid) {
    it(`refuses ${JSON.stringify(value)}`, () => {
      expect(() => parseTrustDomainBundleFlag(value)).toThrow(UsageError);
      expect(() => parseTrustDomainBundleFlag(value)).toThrow(message);
      expect(() => parseTrustDomainBundleFlag(value)).toThrow(/^--trust-domain-bundle /);
    });
  }

  it("maps trust domains to paths and refuses a trust domain given twice", () => {
    expect([...parseTrustDomainBundleFlags(["a=1.pem", "b=2.json"])]).toEqual([
      ["a", "1.pem"],
      ["b", "2.json"],
    ]);
    expect(() => parseTrustDomainBundleFlags(["a=1.pem", "spiffe://a=2.pem"])).toThrow(
      /names trust domain a twice \(1.pem and 2.pem\)/,
    );
  });
});

describe("--authorize and SPIFFE ID flags", () => {
  it("parses patterns and names the bad one", () => {
    expect(parseAuthorizeFlags(["spiffe://east.mesh/*", "spiffe://hub.mesh/x"])).toHaveLength(2);
    expect(() => parseAuthorizeFlags(["spiffe://east.mesh/*", "spiffe://x/*/y"])).toThrow(
      /--authorize "spiffe:\/\/x\/\*\/y"/,
    );
  });

  it("parses a workload's ID and refuses a trust domain's", () => {
    expect(parseSpiffeIdFlag("registrar-spiffe-id", "spiffe://hub.mesh/ns/a/sa/r").path).toBe(
      "/ns/a/sa/r",
    );
    expect(() => parseSpiffeIdFlag("registrar-spiffe-id", "spiffe://hub.mesh")).toThrow(
      /--registrar-spiffe-id "spiffe:\/\/hub.mesh" names a trust domain/,
    );
    expect(() => parseSpiffeIdFlag("registrar-spiffe-id", "hub.mesh/x")).toThrow(
      /^--registrar-spiffe-id: "hub.mesh\/x" is not a SPIFFE ID/,
    );
  });
});
