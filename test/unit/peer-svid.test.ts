/**
 * The connection-side helpers of the SVID check, over the peer-certificate
 * objects Node's TLS gives (built here from certificates a test PKI made):
 * walking `issuerCertificate`, the client's `checkServerIdentity`, and the
 * reason of a client's TLS error.
 */
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DetailedPeerCertificate } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  peerCertificateChain,
  SvidRefusedError,
  spiffeServerIdentity,
  tlsErrorReason,
  verifyPeerCertificate,
} from "../../services/runtime/tls/peer-svid.js";
import { pemCertificates } from "../../services/runtime/tls/pem.js";
import { parseTrustBundle, type TrustBundles } from "../../services/runtime/tls/trust-bundle.js";
import { createSpiffePki, REGISTRAR_ID, type SpiffePki } from "../support/test-spiffe-pki.js";

let dir: string;
let pki: SpiffePki;
let bundles: TrustBundles;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-peer-"));
  pki = await createSpiffePki(dir);
  const hub = parseTrustBundle("hub.mesh", readFileSync(pki.bundles.hubPem, "utf8"), "hub.pem");
  bundles = new Map([["hub.mesh", hub]]);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Node's shape of a peer chain: each certificate's `raw`, linked by `issuerCertificate`; a root issues itself. */
function detailed(files: string[]): DetailedPeerCertificate {
  const certs = files.flatMap((file) => pemCertificates(readFileSync(file, "utf8"), file));
  const nodes = certs.map((cert) => ({ raw: cert.raw }) as DetailedPeerCertificate);
  nodes.forEach((node, i) => {
    node.issuerCertificate = nodes[i + 1] ?? node;
  });
  return nodes[0] as DetailedPeerCertificate;
}

describe("the peer's certificate chain", () => {
  it("walks issuerCertificate to the self-issued root, once", () => {
    const chain = peerCertificateChain(detailed([pki.client.cert, pki.eastRoot.cert]));
    expect(chain?.map((c) => c.subject)).toEqual(["CN=client", "CN=east-ca", "CN=east-root"]);
  });

  it("is undefined when the peer sent nothing (Node gives {})", () => {
    expect(peerCertificateChain({})).toBeUndefined();
    expect(peerCertificateChain(null)).toBeUndefined();
    expect(verifyPeerCertificate({}, bundles)).toMatchObject({
      ok: false,
      reason: "no_certificate",
    });
  });

  it("refuses a certificate that does not parse as bad_certificate", () => {
    const peer = { raw: Buffer.from("not DER") } as DetailedPeerCertificate;
    expect(verifyPeerCertificate(peer, bundles)).toMatchObject({
      ok: false,
      reason: "bad_certificate",
    });
  });
});

describe("checkServerIdentity for a client", () => {
  it("accepts the expected server ID whatever the host name, and refuses another with a typed error", () => {
    const server = detailed([pki.server.cert]);
    expect(
      spiffeServerIdentity(() => bundles, { expectedId: REGISTRAR_ID })("x", server),
    ).toBeUndefined();
    const refused = spiffeServerIdentity(() => bundles, {
      expectedId: "spiffe://hub.mesh/ns/other/sa/x",
    })("127.0.0.1", server);
    expect(refused).toBeInstanceOf(SvidRefusedError);
    expect(refused).toMatchObject({
      reason: "unexpected_spiffe_id",
      code: "ERR_SVID_UNEXPECTED_SPIFFE_ID",
    });
  });

  it("reads the bundles and the clock at each handshake", () => {
    let current: TrustBundles = new Map();
    const check = spiffeServerIdentity(() => current);
    const server = detailed([pki.server.cert]);
    expect(check("h", server)).toMatchObject({ reason: "unknown_trust_domain" });
    current = bundles;
    expect(check("h", server)).toBeUndefined();
    const late = spiffeServerIdentity(() => bundles, { now: () => Date.now() + 3 * 86_400_000 });
    expect(late("h", server)).toMatchObject({ reason: "expired" });
  });
});

describe("the reason of a client's TLS error", () => {
  it.each([
    [new SvidRefusedError("multiple_uri_sans", "x"), "multiple_uri_sans"],
    [Object.assign(new Error("x"), { code: "CERT_HAS_EXPIRED" }), "expired"],
    [Object.assign(new Error("x"), { code: "CERT_NOT_YET_VALID" }), "not_yet_valid"],
    [Object.assign(new Error("x"), { code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" }), "untrusted_chain"],
    [Object.assign(new Error("x"), { code: "SELF_SIGNED_CERT_IN_CHAIN" }), "untrusted_chain"],
    [Object.assign(new Error("x"), { code: "ECONNRESET" }), undefined],
    [new Error("x"), undefined],
    [undefined, undefined],
  ])("%s → %s", (error, reason) => {
    expect(tlsErrorReason(error)).toBe(reason);
  });

  it("makes an X509Certificate of every link", () => {
    const [leaf] = peerCertificateChain(detailed([pki.server.cert])) ?? [];
    expect(leaf).toBeInstanceOf(X509Certificate);
    expect(leaf?.serialNumber).toBe(pki.server.serial);
  });
});
