/**
 * Backend TLS in aetherctl, table-driven: which entry applies to a port
 * (the port's own, else every port's, else none), how `get` prints a
 * projection's entries, and the `backend tls:` line of `explain` for the
 * chosen backend. Certificate text is never printed.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  backendTlsLines,
  describeBackendTls,
} from "../../clients/aetherctl/backend-tls-describe.js";
import { formatExplanation } from "../../clients/aetherctl/explain-format.js";
import { formatProjectionTree } from "../../clients/aetherctl/projection-tree.js";
import {
  type BackendTls,
  BackendTlsSchema,
  ServiceConfigProjectionSchema,
  WellKnownCaCertificates,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { backendTlsFor } from "../../services/common/backend-tls-select.js";
import { evaluate } from "../../services/common/evaluator.js";
import { explainTargetFromWeb } from "../support/explain-target.js";

const PEM = "-----BEGIN CERTIFICATE-----\nMIIBsecretish\n-----END CERTIFICATE-----\n";

const every = create(BackendTlsSchema, {
  hostname: "web.shop.example",
  caCertificatesPem: PEM + PEM,
  policyNamespace: "shop",
  policyName: "web-all",
});
const https = create(BackendTlsSchema, {
  port: 443,
  sectionName: "https",
  hostname: "web.example.com",
  wellKnownCaCertificates: WellKnownCaCertificates.SYSTEM,
  subjectAltNames: [{ name: { case: "uri", value: "spiffe://hub.mesh/ns/shop/sa/web" } }],
  options: [{ key: "example.com/min-version", value: "1.3" }],
  policyNamespace: "shop",
  policyName: "web-https",
});
const projection = create(ServiceConfigProjectionSchema, {
  service: "shop/web",
  originCluster: "hub",
  version: "2026-11-29T12:00:00.000000000Z",
  backendTls: [every, https],
});

describe("backendTlsFor", () => {
  const cases: [string, BackendTls[], number, BackendTls | undefined][] = [
    ["the port's own entry wins", [every, https], 443, https],
    ["another port falls back to every port", [every, https], 80, every],
    ["no entry for every port: none", [https], 80, undefined],
    ["no entries: none", [], 443, undefined],
  ];
  for (const [name, entries, port, want] of cases) {
    it(name, () => {
      const p = create(ServiceConfigProjectionSchema, { service: "shop/web", backendTls: entries });
      expect(backendTlsFor(p, port)).toBe(want);
    });
  }
  it("no projection: none", () => expect(backendTlsFor(undefined, 443)).toBeUndefined());
});

describe("describing backend TLS", () => {
  it("one line per case, never the certificate text", () => {
    expect(describeBackendTls(every)).toBe(
      "TLS, SNI web.shop.example, CA bundle (2 certificates), verify web.shop.example, BackendTLSPolicy shop/web-all",
    );
    expect(describeBackendTls(https)).toBe(
      "TLS, SNI web.example.com, system CAs, verify uri spiffe://hub.mesh/ns/shop/sa/web, BackendTLSPolicy shop/web-https",
    );
  });

  it("aetherctl get: a header count and a block per entry", () => {
    expect(backendTlsLines(projection)).toEqual([
      "BackendTLSPolicy shop/web-all: every port",
      "  hostname: web.shop.example (SNI and verified name)",
      "  trust: CA bundle (2 certificates)",
      "BackendTLSPolicy shop/web-https: port 443 (https)",
      "  hostname: web.example.com (SNI)",
      "  trust: system CAs",
      "  subject alt names: uri spiffe://hub.mesh/ns/shop/sa/web",
      "  options: example.com/min-version=1.3",
    ]);
    const tree = formatProjectionTree(projection, Date.parse("2026-11-29T12:00:00Z"), {
      keyId: undefined,
      algorithm: undefined,
      state: "unsigned",
    });
    expect(tree).toContain("backend tls:  2\n");
    expect(tree).toContain("\nBackendTLSPolicy shop/web-https: port 443 (https)\n");
    expect(tree).not.toContain("MIIB");
  });
});

describe("aetherctl explain: the backend TLS of the chosen backend", () => {
  const explain = (url: string) => {
    const target = explainTargetFromWeb(["GET", url]);
    const decision = evaluate({
      projections: [projection],
      request: target.request,
      mesh: { service: target.service, port: target.port, callerNamespace: target.callerNamespace },
      random: () => 0,
    });
    const entry = backendTlsFor(projection, decision.backend?.port ?? 0);
    return formatExplanation({
      target,
      projection,
      view: "effective view",
      decision,
      random: "constant 0",
      ...(entry === undefined ? {} : { backendTls: entry }),
    });
  };
  const cases: [string, string, RegExp][] = [
    [
      "port 443: its own policy",
      "https://web.shop:443/",
      /backend tls: +TLS, SNI web\.example\.com, system CAs, .*shop\/web-https\n/,
    ],
    [
      "port 80: every port's policy",
      "http://web.shop:80/",
      /backend tls: +TLS, SNI web\.shop\.example, CA bundle \(2 certificates\), .*shop\/web-all\n/,
    ],
  ];
  for (const [name, url, want] of cases) {
    it(name, () => expect(explain(url)).toMatch(want));
  }
});
