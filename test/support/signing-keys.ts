/** Signing keys generated for tests, with the public half as `--origin-keys` lists it. */
import { generateKeyPairSync } from "node:crypto";
import { parseSigningKey, type SigningKey } from "../../services/signing/signing-key.js";

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
