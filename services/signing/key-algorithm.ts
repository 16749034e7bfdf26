/**
 * What kind of key a Node `KeyObject` is, as a projection signature names
 * it, and its key id. Only Ed25519 and ECDSA P-256 keys are accepted.
 */
import { createHash, createPublicKey, type KeyObject } from "node:crypto";
import { SignatureAlgorithm } from "../../gen/aether/registry/v1/projection_pb.js";

/**
 * The signature algorithm of `key` (private or public). Throws an Error
 * naming `source` for any other kind of key.
 */
export function algorithmOfKey(key: KeyObject, source: string): SignatureAlgorithm {
  if (key.asymmetricKeyType === "ed25519") return SignatureAlgorithm.ED25519;
  if (key.asymmetricKeyType === "ec") {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === "prime256v1") return SignatureAlgorithm.ECDSA_P256_SHA256;
    throw new Error(`${source}: an EC key on curve ${curve ?? "unknown"}; only P-256 is supported`);
  }
  throw new Error(
    `${source}: a ${key.asymmetricKeyType ?? "symmetric"} key; only Ed25519 and ECDSA P-256 keys are supported`,
  );
}

/**
 * The key id of a key pair, from its public half (or a private key's): the
 * first 16 hex digits of the SHA-256 of the DER SubjectPublicKeyInfo.
 */
export function keyIdOf(key: KeyObject): string {
  const publicKey = key.type === "private" ? createPublicKey(key) : key;
  const der = publicKey.export({ type: "spki", format: "der" });
  return createHash("sha256").update(der).digest("hex").slice(0, 16);
}
