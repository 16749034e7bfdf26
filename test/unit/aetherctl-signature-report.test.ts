/**
 * aetherctl's report on a projection's signature: each state (verified, bad
 * signature, unknown key, unsigned, not checked) from real Ed25519 and ECDSA
 * keys, then each state's forms: the `get` tree line, the `list` SIGNED cell
 * and the `-o json` object.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  describeSignature,
  reportSignature,
  type SignatureReport,
  type SignatureState,
  signatureJson,
  signedCell,
} from "../../clients/aetherctl/signature-report.js";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { createSignatureCheck } from "../../services/common/signature-check.js";
import { parseOriginKeys, verifyWithKey } from "../../services/signing/origin-keys.js";
import { signStoredValue } from "../../services/signing/signing-key.js";
import { generateTestSigningKey, type TestSigningKey } from "../support/signing-keys.js";

const hubKey = generateTestSigningKey("ed25519");
const ecKey = generateTestSigningKey("ec");
const strangerKey = generateTestSigningKey("ed25519");

const STORED = toBinary(
  ServiceConfigProjectionSchema,
  create(ServiceConfigProjectionSchema, {
    service: "shop/cart",
    originCluster: "hub",
    version: "2026-12-01T10:00:00.000000001Z",
    routes: [{ namespace: "shop", name: "cart", hostnames: ["cart.shop"] }],
  }),
);
const unsigned = () => fromBinary(ServiceConfigProjectionSchema, STORED);

/** The projection signed by `key` for `origin`, decoded as aetherctl receives it. */
function signed(key: TestSigningKey, origin = "hub"): ServiceConfigProjection {
  return fromBinary(ServiceConfigProjectionSchema, signStoredValue(STORED, origin, key.key));
}

/** Signed by hub's key, then one route's name changed ("cart" → "cars"). */
function altered(): ServiceConfigProjection {
  const projection = signed(hubKey);
  if (projection.routes[0] !== undefined) projection.routes[0].name = "cars";
  return projection;
}

/** Signed by hub's key for east, served as hub's. */
const forEast = () => signed(hubKey, "east");

/** Signed by hub's key, served as west's (a key west does not have). */
const asWest = () => ({ ...signed(hubKey, "west"), originCluster: "west" });

const check = createSignatureCheck({
  keyring: () =>
    parseOriginKeys(
      JSON.stringify({ origins: { hub: [hubKey.publicPem, ecKey.publicPem] } }),
      "keys.json",
    ),
  verify: verifyWithKey,
  require: true,
});

describe("reportSignature", () => {
  it.each([
    ["verified (ed25519)", () => signed(hubKey), true, "verified", "ed25519"],
    ["verified (ecdsa)", () => signed(ecKey), true, "verified", "ecdsa-p256-sha256"],
    ["bad signature (altered)", altered, true, "bad_signature", "ed25519"],
    ["bad signature (signed for east)", forEast, true, "bad_signature", "ed25519"],
    ["unknown key", () => signed(strangerKey), true, "unknown_key", "ed25519"],
    ["unknown key (origin not in the file)", asWest, true, "unknown_key", "ed25519"],
    ["unsigned, with keys", unsigned, true, "unsigned", undefined],
    ["unsigned, without keys", unsigned, false, "unsigned", undefined],
    ["not checked (no --origin-keys), even when altered", altered, false, "not_checked", "ed25519"],
  ] as const)("%s", (_, projection, withKeys, state, algorithm) => {
    const p = projection();
    expect(reportSignature(p, withKeys ? check : undefined)).toEqual({
      keyId: p.signature?.keyId,
      algorithm,
      state,
    });
  });

  it("reports the key id the projection names", () => {
    expect(reportSignature(signed(ecKey), check).keyId).toBe(ecKey.key.keyId);
    expect(reportSignature(signed(strangerKey), check).keyId).toBe(strangerKey.key.keyId);
  });
});

describe("a report's forms", () => {
  const K = "5f0c6e2b9a1d3c47";
  it.each([
    ["verified", `key ${K} of hub (ed25519): verified`, K],
    ["bad_signature", `key ${K} of hub (ed25519): bad signature`, `${K} (bad signature)`],
    ["unknown_key", `key ${K} of hub (ed25519): unknown key`, `${K} (unknown key)`],
    ["not_checked", `key ${K} of hub (ed25519): not checked (no --origin-keys)`, K],
  ] as const)("%s: %s, cell %s", (state: SignatureState, line, cell) => {
    const report: SignatureReport = { keyId: K, algorithm: "ed25519", state };
    expect(describeSignature(report, "hub")).toBe(line);
    expect(signedCell(report)).toBe(cell);
    expect(signatureJson(report)).toEqual({ keyId: K, algorithm: "ed25519", state });
  });

  it("unsigned: the word, a dash, and nulls", () => {
    const report: SignatureReport = { keyId: undefined, algorithm: undefined, state: "unsigned" };
    expect(describeSignature(report, "hub")).toBe("unsigned");
    expect(signedCell(report)).toBe("-");
    expect(signatureJson(report)).toEqual({ keyId: null, algorithm: null, state: "unsigned" });
  });
});
