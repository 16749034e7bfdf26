/**
 * X.509-SVID verification over certificates a test PKI made with openssl:
 * each rule of the standard and each reason code, with the clock injected.
 */
import type { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { certificateKeyUsage } from "../../services/runtime/tls/key-usage.js";
import { pemCertificates } from "../../services/runtime/tls/pem.js";
import { parseSubjectAltNames } from "../../services/runtime/tls/subject-alt-names.js";
import { type SvidVerification, verifySvid } from "../../services/runtime/tls/svid-verify.js";
import { parseTrustBundle, type TrustBundles } from "../../services/runtime/tls/trust-bundle.js";
import { openssl } from "../support/openssl.js";
import { issueSvid } from "../support/spiffe-ca.js";
import {
  AGENT_ID,
  createSpiffePki,
  REGISTRAR_ID,
  type SpiffePki,
} from "../support/test-spiffe-pki.js";

const HOUR = 3_600_000;
let dir: string;
let pki: SpiffePki;
let bundles: TrustBundles;
/** Extra certificates made for single cases: name → chain. */
const extra = new Map<string, X509Certificate[]>();

function chainOf(file: string): X509Certificate[] {
  return pemCertificates(readFileSync(file, "utf8"), file);
}

function bundleOf(trustDomain: string, file: string) {
  return parseTrustBundle(trustDomain, readFileSync(file, "utf8"), file);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-svid-"));
  pki = await createSpiffePki(dir);
  bundles = new Map([
    ["hub.mesh", bundleOf("hub.mesh", pki.bundles.hubJwks)],
    ["east.mesh", bundleOf("east.mesh", pki.bundles.eastPem)],
  ]);
  const cases: [string, string[]][] = [
    ["smuggled", ["spiffe://east.mesh/x, DNS:evil"]],
    ["https-uri", ["https://east.mesh/ns/a"]],
    ["trust-domain-id", ["spiffe://east.mesh"]],
    ["upper-case", ["spiffe://EAST.mesh/ns/a"]],
  ];
  for (const [name, uris] of cases) {
    extra.set(name, chainOf((await issueSvid(pki.eastCa, dir, name, { uris })).cert));
  }
  const signer = { uris: [AGENT_ID], keyUsage: "critical,digitalSignature,keyCertSign,cRLSign" };
  extra.set("signer", chainOf((await issueSvid(pki.eastCa, dir, "signer", signer)).cert));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function verify(chain: X509Certificate[], options: { now?: number; expectedId?: string } = {}) {
  return verifySvid(chain, bundles, { now: Date.now(), ...options });
}

function reasonOf(verdict: SvidVerification): string {
  return verdict.ok ? `ok ${verdict.id.text}` : verdict.reason;
}

describe("X.509-SVID verification", () => {
  it("accepts the client (leaf and intermediate, east's root in a PEM bundle) and returns its ID", () => {
    const verdict = verify(chainOf(pki.client.cert));
    expect(verdict).toMatchObject({ ok: true, id: { text: AGENT_ID, trustDomain: "east.mesh" } });
    expect(verdict.ok && verdict.leaf.serialNumber).toBe(pki.client.serial);
  });

  it("accepts the server (hub's CA in a JWKS bundle)", () => {
    expect(reasonOf(verify(chainOf(pki.server.cert)))).toBe(`ok ${REGISTRAR_ID}`);
  });

  const refusals: [string, () => X509Certificate[], string, RegExp][] = [
    ["no certificate", () => [], "no_certificate", /sent no certificate/],
    [
      "a DNS-only certificate",
      () => chainOf(pki.noSpiffeId.cert),
      "no_spiffe_id",
      /has no URI SAN/,
    ],
    [
      "an https URI SAN",
      () => extra.get("https-uri") ?? [],
      "no_spiffe_id",
      /URI SAN "https:\/\/east.mesh\/ns\/a" is not a spiffe:\/\/ ID/,
    ],
    [
      "two URI SANs",
      () => chainOf(pki.twoUris.cert),
      "multiple_uri_sans",
      /has 2 URI SANs \(spiffe:\/\/east.mesh\/ns\/aether-system\/sa\/aether-agent, spiffe:\/\/east.mesh\/ns\/other\/sa\/x\)/,
    ],
    [
      "a second name smuggled inside one URI",
      () => extra.get("smuggled") ?? [],
      "invalid_spiffe_id",
      /segment "x, DNS:evil"/,
    ],
    [
      "a trust domain's own ID",
      () => extra.get("trust-domain-id") ?? [],
      "invalid_spiffe_id",
      /names a trust domain; a leaf SVID's ID has a path/,
    ],
    [
      "an upper-case trust domain",
      () => extra.get("upper-case") ?? [],
      "invalid_spiffe_id",
      /must be lower-case/,
    ],
    [
      "a CA certificate as leaf",
      () => chainOf(pki.leafCa.cert),
      "leaf_is_ca",
      /is a CA \(basicConstraints CA:TRUE\); an SVID is a leaf/,
    ],
    [
      "a CA:FALSE leaf that may sign certificates",
      () => extra.get("signer") ?? [],
      "leaf_is_ca",
      /has the key usage keyCertSign and cRLSign; an SVID is a leaf/,
    ],
    [
      "an expired certificate",
      () => chainOf(pki.expired.cert),
      "expired",
      /expired at Jan {2}2 00:00:00 2020 GMT/,
    ],
    [
      "a certificate valid from tomorrow",
      () => chainOf(pki.notYetValid.cert),
      "not_yet_valid",
      /is not valid before/,
    ],
    [
      "a CA no bundle holds",
      () => chainOf(pki.unknownCa.cert),
      "untrusted_chain",
      /does not chain to trust domain east.mesh's bundle .*east.mesh.pem.*no chain from CN=rogue-ca/,
    ],
    [
      "east's CA signing a hub.mesh ID",
      () => chainOf(pki.forgery.cert),
      "untrusted_chain",
      /spiffe:\/\/hub.mesh\/ns\/aether-system\/sa\/aether-agent does not chain to trust domain hub.mesh's bundle .*no chain from CN=east-ca/,
    ],
    [
      "a leaf without the intermediate it needs",
      () => chainOf(pki.client.cert).slice(0, 1),
      "untrusted_chain",
      /no chain from CN=east-ca/,
    ],
  ];
  for (const [what, chain, reason, message] of refusals) {
    it(`refuses ${what}: ${reason}`, () => {
      const verdict = verify(chain());
      expect(reasonOf(verdict)).toBe(reason);
      expect(verdict.ok ? "" : verdict.message).toMatch(message);
    });
  }

  it("names the claimed ID in a refusal once it is known", () => {
    expect(verify(chainOf(pki.forgery.cert))).toMatchObject({
      id: { text: "spiffe://hub.mesh/ns/aether-system/sa/aether-agent" },
    });
    expect(verify([])).not.toHaveProperty("id");
  });

  it("refuses an ID whose trust domain has no bundle", () => {
    const hubOnly = new Map([...bundles].filter(([trustDomain]) => trustDomain === "hub.mesh"));
    const verdict = verifySvid(chainOf(pki.client.cert), hubOnly, { now: Date.now() });
    expect(reasonOf(verdict)).toBe("unknown_trust_domain");
    expect(verdict.ok ? "" : verdict.message).toMatch(
      /trust domain east.mesh, which has no configured bundle/,
    );
  });

  it("checks the validity window at the injected clock, leaf and CAs alike", () => {
    const client = chainOf(pki.client.cert);
    expect(reasonOf(verify(client, { now: Date.now() + 25 * HOUR }))).toBe("expired");
    expect(reasonOf(verify(client, { now: Date.now() - 2 * HOUR }))).toBe("not_yet_valid");
    // Half an hour ago the leaf and intermediate (valid from an hour ago) were valid, but east's root (made just now) was not.
    const early = verify(client, { now: Date.now() - HOUR / 2 });
    expect(reasonOf(early)).toBe("untrusted_chain");
    expect(early.ok ? "" : early.message).toMatch(
      /its issuer CN=east-root is outside its validity window/,
    );
  });

  it("takes intermediates in any order, with extra certificates and the root sent along", () => {
    const [leaf, intermediate] = chainOf(pki.client.cert) as [X509Certificate, X509Certificate];
    const [root] = chainOf(pki.eastRoot.cert) as [X509Certificate];
    const [other] = chainOf(pki.hubCa.cert) as [X509Certificate];
    expect(reasonOf(verify([leaf, root, other, intermediate]))).toBe(`ok ${AGENT_ID}`);
  });

  it("accepts only the expected ID when one is given", () => {
    const client = chainOf(pki.client.cert);
    expect(reasonOf(verify(client, { expectedId: AGENT_ID }))).toBe(`ok ${AGENT_ID}`);
    const verdict = verify(client, { expectedId: REGISTRAR_ID });
    expect(reasonOf(verdict)).toBe("unexpected_spiffe_id");
    expect(verdict.ok ? "" : verdict.message).toMatch(
      `the peer is ${AGENT_ID}, not ${REGISTRAR_ID}`,
    );
  });
});

describe("key usage read from the DER", () => {
  it("reads a leaf's, a CA's, and none", async () => {
    const [client] = chainOf(pki.client.cert) as [X509Certificate];
    expect(certificateKeyUsage(client.raw)).toEqual({
      digitalSignature: true,
      keyCertSign: false,
      cRLSign: false,
    });
    const [root] = chainOf(pki.hubCa.cert) as [X509Certificate];
    expect(certificateKeyUsage(root.raw)).toEqual({
      digitalSignature: false,
      keyCertSign: true,
      cRLSign: true,
    });
    const bare = join(dir, "bare");
    await openssl([
      ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
      ...["-keyout", `${bare}.key`, "-out", `${bare}.crt`, "-subj", "/CN=bare", "-days", "1"],
    ]);
    const [noUsage] = chainOf(`${bare}.crt`) as [X509Certificate];
    expect(certificateKeyUsage(noUsage.raw)).toBeUndefined();
  });

  it("throws on DER it cannot walk", () => {
    const [client] = chainOf(pki.client.cert) as [X509Certificate];
    expect(() => certificateKeyUsage(client.raw.subarray(0, 40))).toThrow(/runs past its parent/);
    expect(() => certificateKeyUsage(Uint8Array.of(0x30))).toThrow(/truncated DER/);
  });
});

describe("subject alternative names as Node prints them", () => {
  const cases: [string | undefined, [string, string][]][] = [
    [undefined, []],
    ["", []],
    ["URI:spiffe://a/b", [["URI", "spiffe://a/b"]]],
    [
      "URI:spiffe://a/b, DNS:localhost, IP Address:127.0.0.1",
      [
        ["URI", "spiffe://a/b"],
        ["DNS", "localhost"],
        ["IP Address", "127.0.0.1"],
      ],
    ],
    [
      'URI:"spiffe://hub.mesh/x\\u002c DNS:evil", DNS:ok',
      [
        ["URI", "spiffe://hub.mesh/x, DNS:evil"],
        ["DNS", "ok"],
      ],
    ],
    [
      'DNS:"a\\"b", URI:x',
      [
        ["DNS", 'a"b'],
        ["URI", "x"],
      ],
    ],
  ];
  for (const [text, names] of cases) {
    it(`reads ${JSON.stringify(text)}`, () => {
      expect(parseSubjectAltNames(text).map((n) => [n.type, n.value])).toEqual(names);
    });
  }
  it.each([
    ['URI:"spiffe://a', /unterminated quoted URI name/],
    ['URI:"a"b', /unexpected text after a quoted URI name/],
    ["garbage", /unreadable/],
  ])("refuses %j", (text, message) => {
    expect(() => parseSubjectAltNames(text)).toThrow(message);
  });
});
