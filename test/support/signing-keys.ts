/**
 * Signing keys generated for tests, with the public half as `--origin-keys`
 * lists it; the `--origin-keys` files that list them, and signed projections
 * (a signature check over them is `createOriginKeysCheck` of
 * `services/signing/origin-keys-source.ts`).
 */
import { generateKeyPairSync } from "node:crypto";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { type OriginKeys, parseOriginKeys } from "../../services/signing/origin-keys.js";
import {
  parseSigningKey,
  type SigningKey,
  signStoredValue,
} from "../../services/signing/signing-key.js";

/** A generated key pair: the signing key and its public key, PEM SPKI. */
export interface TestSigningKey {
  readonly key: SigningKey;
  readonly publicPem: string;
}

/** Generates an Ed25519 (default) or ECDSA P-256 key pair. */
export function generateTestSigningKey(type: "ed25519" | "ec" = "ed25519"): TestSigningKey {
  const { privateKey } =
    type === "ed25519"
      ? generateKeyPairSync("ed25519")
      : generateKeyPairSync("ec", { namedCurve: "P-256" });
  const key = parseSigningKey(privateKey.export({ type: "pkcs8", format: "pem" }), "test-key");
  return { key, publicPem: key.publicKeyPem };
}

/** A new Ed25519 signing key. */
export function newSigningKey(): SigningKey {
  return generateTestSigningKey().key;
}

/** The JSON text of an `--origin-keys` file listing the public halves of `origins`' keys. */
export function originKeysText(origins: Record<string, readonly SigningKey[]>): string {
  return JSON.stringify({
    origins: Object.fromEntries(
      Object.entries(origins).map(([origin, keys]) => [origin, keys.map((k) => k.publicKeyPem)]),
    ),
  });
}

/** The keys of an `--origin-keys` file listing `origins`' keys, parsed. */
export function originKeysOf(origins: Record<string, readonly SigningKey[]>): OriginKeys {
  return parseOriginKeys(originKeysText(origins), "keys.json");
}

/** The stored bytes of `projection` signed by `key` for `origin`. */
export function signedValue(
  projection: ServiceConfigProjection,
  origin: string,
  key: SigningKey,
): Uint8Array {
  return signStoredValue(toBinary(ServiceConfigProjectionSchema, projection), origin, key);
}

/** `projection` signed by `key` for `origin`, decoded again (what an agent receives). */
export function signedProjection(
  projection: ServiceConfigProjection,
  origin: string,
  key: SigningKey,
): ServiceConfigProjection {
  return fromBinary(ServiceConfigProjectionSchema, signedValue(projection, origin, key));
}
