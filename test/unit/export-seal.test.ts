/**
 * Who signed a stored own value, as the export controller judges it: its key
 * id only when the signature verifies under the key in force; `""` for an
 * unsigned value; `?id` for another key's, a forged or a signed-for-another-
 * origin value, so that the controller writes it again.
 */
import { generateKeyPairSync } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import {
  createSealer,
  sealReader,
  wantedSeal,
} from "../../services/registrar/export/export-seal.js";
import { encodeProjection } from "../../services/registrar/store/decode-entry.js";
import { parseSigningKey, signStoredValue } from "../../services/signing/signing-key.js";
import { versionAt } from "../support/projections.js";

const newKey = (p256 = false) =>
  parseSigningKey(
    (p256
      ? generateKeyPairSync("ec", { namedCurve: "P-256" })
      : generateKeyPairSync("ed25519")
    ).privateKey.export({ type: "pkcs8", format: "pem" }),
    "test key",
  );

const own = newKey();
const old = newKey(true);
const stored = encodeProjection(
  create(ServiceConfigProjectionSchema, { service: "shop/a", version: versionAt(1) }),
  "hub",
);

describe("the export seal", () => {
  const seal = sealReader("hub", () => own);
  const forged = signStoredValue(stored, "hub", own);
  forged[forged.length - 1] = (forged[forged.length - 1] as number) ^ 0x01;
  it.each([
    ["unsigned", stored, ""],
    ["signed with the key in force", signStoredValue(stored, "hub", own), own.keyId],
    ["signed with an old key", signStoredValue(stored, "hub", old), `?${old.keyId}`],
    ["signed for another origin", signStoredValue(stored, "east", own), `?${own.keyId}`],
    ["a signature byte flipped", forged, `?${own.keyId}`],
    ["bytes that do not split", Uint8Array.of(0x08, 0xff), "?"],
  ])("%s", (_name, value, expected) => {
    expect(seal(value)).toBe(expected);
  });

  it("follows the key in force, and wants its id (none without a key)", () => {
    let key = old;
    const following = sealReader("hub", () => key);
    const value = signStoredValue(stored, "hub", old);
    expect(following(value)).toBe(old.keyId);
    key = own;
    expect(following(value)).toBe(`?${old.keyId}`);
    expect(wantedSeal(own)).toBe(own.keyId);
    expect(wantedSeal(undefined)).toBe("");
    expect(sealReader("hub", () => undefined)(value)).toBe(`?${old.keyId}`);
  });

  it("knows the values it signed by identity, for the key in force only", () => {
    let key = own;
    const sealer = createSealer("hub", () => key);
    const value = sealer.sign(stored, own);
    expect(sealer.sealOf(value)).toBe(own.keyId);
    // The same bytes in another array are verified: still the key's.
    expect(sealer.sealOf(Uint8Array.from(value))).toBe(own.keyId);
    key = old;
    expect(sealer.sealOf(value)).toBe(`?${own.keyId}`);
  });
});
