/**
 * Trust bundles: PEM CA bundles and SPIFFE bundles (JWKS) parsed from the
 * text of files a test PKI made with openssl, valid and broken in each way
 * the parser must name.
 */
import { generateKeyPairSync, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleAuthoritiesPem, parseTrustBundle } from "../../services/runtime/tls/trust-bundle.js";
import { createSpiffeCa, writeJwksBundle } from "../support/spiffe-ca.js";
import { createSpiffePki, type SpiffePki } from "../support/test-spiffe-pki.js";

let dir: string;
let pki: SpiffePki;
/** The hub CA's JWKS bundle, parsed as JSON, and its certificate. */
let hubJwks: { keys: Record<string, unknown>[] };
let hubCert: X509Certificate;
let rsaJwks: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-bundle-"));
  pki = await createSpiffePki(dir);
  hubJwks = JSON.parse(readFileSync(pki.bundles.hubJwks, "utf8"));
  hubCert = new X509Certificate(readFileSync(pki.hubCa.cert));
  const rsaCa = await createSpiffeCa(dir, "rsa-ca", "rsa.mesh", { keyType: "rsa" });
  await writeJwksBundle(join(dir, "rsa.json"), [rsaCa, pki.hubCa]);
  rsaJwks = readFileSync(join(dir, "rsa.json"), "utf8");
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The hub JWKS with its first (x509-svid) key changed by `edit`. */
function editedJwks(edit: (key: Record<string, unknown>) => Record<string, unknown> | unknown) {
  const [first, ...rest] = hubJwks.keys;
  return JSON.stringify({ ...hubJwks, keys: [edit({ ...first }), ...rest] });
}

describe("PEM CA bundles", () => {
  it("reads every CA of the file, with comments between blocks", () => {
    const text = `# east root\n${readFileSync(pki.eastRoot.cert, "utf8")}\n# hub\n${readFileSync(pki.hubCa.cert, "utf8")}`;
    const bundle = parseTrustBundle("east.mesh", text, "east.pem");
    expect(bundle).toMatchObject({ trustDomain: "east.mesh", source: "east.pem", format: "pem" });
    expect(bundle.authorities.map((ca) => ca.subject)).toEqual(["CN=east-root", "CN=hub-ca"]);
    expect(bundleAuthoritiesPem(new Map([["east.mesh", bundle]]))).toHaveLength(2);
  });

  it.each([
    ["an empty file", () => "", /^east.pem is empty$/],
    ["whitespace", () => "\n \n", /^east.pem is empty$/],
    ["text", () => "hello", /is neither a PEM CA bundle nor a SPIFFE bundle/],
    [
      "a half-written certificate",
      () => readFileSync(pki.eastRoot.cert, "utf8").slice(0, 300),
      /holds no complete PEM CERTIFICATE block/,
    ],
    [
      "a private key",
      () => readFileSync(pki.eastRoot.key, "utf8"),
      /block 1 is a PRIVATE KEY, where only CERTIFICATE blocks belong/,
    ],
    [
      "a leaf certificate",
      () => readFileSync(pki.client.cert, "utf8"),
      /certificate 1 \(CN=client serial [0-9A-F]+\) is not a CA/,
    ],
    [
      "a corrupt certificate",
      () => "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
      /certificate 1 does not parse/,
    ],
  ])("refuses %s, naming the file", (_, text, message) => {
    expect(() => parseTrustBundle("east.mesh", text(), "east.pem")).toThrow(message);
  });

  it("never quotes a private key it refuses", () => {
    const key = readFileSync(pki.eastRoot.key, "utf8");
    const body = key.split("\n")[1] as string;
    expect(() => parseTrustBundle("east.mesh", key, "east.pem")).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining(body.slice(0, 20)) }),
    );
  });
});

describe("SPIFFE bundles (JWKS)", () => {
  it("reads x509-svid keys and skips the jwt-svid key", () => {
    const bundle = parseTrustBundle(
      "hub.mesh",
      readFileSync(pki.bundles.hubJwks, "utf8"),
      "hub.json",
    );
    expect(bundle.format).toBe("spiffe");
    expect(bundle.sequence).toBe(7);
    expect(bundle.authorities.map((ca) => ca.fingerprint256)).toEqual([hubCert.fingerprint256]);
    expect(bundle.ignored).toEqual(['hub.json: key 2 is for "jwt-svid", not x509-svid']);
  });

  it("reads RSA and EC keys together", () => {
    const bundle = parseTrustBundle("rsa.mesh", rsaJwks, "rsa.json");
    expect(bundle.authorities.map((ca) => ca.subject)).toEqual(["CN=rsa-ca", "CN=hub-ca"]);
  });

  it.each([
    [
      "no use",
      (key: Record<string, unknown>) => ({ ...key, use: undefined }),
      /key 1 has no "use"/,
    ],
    [
      "an unknown use",
      (key: Record<string, unknown>) => ({ ...key, use: "x509" }),
      /key 1 is for "x509"/,
    ],
    [
      "no x5c",
      (key: Record<string, unknown>) => ({ ...key, x5c: undefined }),
      /key 1 \(x509-svid\) has no x5c/,
    ],
    ["an empty x5c", (key: Record<string, unknown>) => ({ ...key, x5c: [] }), /has no x5c/],
    [
      "an unknown key type",
      (key: Record<string, unknown>) => ({ ...key, kty: "oct" }),
      /has key type "oct", not EC, RSA or OKP/,
    ],
  ])("skips an entry with %s, as the standard says, and lists it", (_, edit, message) => {
    const bundle = parseTrustBundle("hub.mesh", editedJwks(edit), "hub.json");
    expect(bundle.authorities).toEqual([]);
    expect(bundle.ignored[0]).toMatch(message);
  });

  it("accepts a bundle with no keys at all (a trust domain that revoked its keys)", () => {
    const bundle = parseTrustBundle("hub.mesh", '{"keys": []}', "hub.json");
    expect(bundle.authorities).toEqual([]);
  });

  const other = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({
    format: "jwk",
  });
  it.each([
    ["not JSON", () => "{ keys: ", /^hub.json is not valid JSON \(/],
    ["an array", () => "[]", /has no "keys" array/],
    ["keys that are not an array", () => '{"keys": {}}', /has no "keys" array/],
    ["an entry that is not an object", () => editedJwks(() => "x"), /key 1 is not a JSON object/],
    [
      "x5c that is not base64",
      () => editedJwks((k) => ({ ...k, x5c: ["%%%"] })),
      /key 1: x5c\[0\] is not a base64 DER certificate/,
    ],
    [
      "x5c that is not a certificate",
      () => editedJwks((k) => ({ ...k, x5c: ["AAAA"] })),
      /x5c\[0\] is not a base64 DER certificate/,
    ],
    [
      "x5c that is a number",
      () => editedJwks((k) => ({ ...k, x5c: [42] })),
      /x5c\[0\] is not a base64 DER/,
    ],
    [
      "a leaf in x5c",
      () =>
        editedJwks((k) => ({
          ...k,
          x5c: [new X509Certificate(readFileSync(pki.client.cert)).raw.toString("base64")],
        })),
      /key 1: the x5c certificate is not a CA/,
    ],
    [
      "key parameters of another key",
      () => editedJwks((k) => ({ ...k, ...other })),
      /key 1: its key parameters are not the key of its x5c certificate/,
    ],
    [
      "broken key parameters",
      () => editedJwks((k) => ({ ...k, x: "AA" })),
      /key 1: its EC key parameters are not a valid public key/,
    ],
  ])("refuses %s, naming the file and entry", (_, text, message) => {
    expect(() => parseTrustBundle("hub.mesh", text(), "hub.json")).toThrow(message);
  });
});
