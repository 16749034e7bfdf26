/**
 * An origin's signing key: read from a PEM PKCS#8 file (Ed25519, or ECDSA
 * P-256), and the signature it makes over a stored projection. Errors name
 * the file and what is wrong with it, never its contents.
 */
import { createPrivateKey, createPublicKey, type KeyObject, sign } from "node:crypto";
import { readFile } from "node:fs/promises";
import { create } from "@bufbuild/protobuf";
import {
  ProjectionSignatureSchema,
  SignatureAlgorithm,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { signedBytes, splitStoredValue, withSignature } from "../common/projection-signature.js";
import { algorithmOfKey, keyIdOf } from "./key-algorithm.js";

/** A private key an exporter signs its projections with. */
export interface SigningKey {
  /** Its key id (see `ProjectionSignature.key_id`). */
  readonly keyId: string;
  /** Its algorithm. */
  readonly algorithm: SignatureAlgorithm;
  /** Its public key, PEM SPKI (what importers list in `--origin-keys`). */
  readonly publicKeyPem: string;
  /** Signs `data`: the signature bytes as `ProjectionSignature.signature` carries them. */
  sign(data: Uint8Array): Uint8Array;
}

/**
 * Parses a PEM PKCS#8 private key. Throws an Error naming `source` when it
 * is not one, or not an Ed25519 or ECDSA P-256 key.
 */
export function parseSigningKey(pem: string | Buffer, source: string): SigningKey {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: "pem" });
  } catch (error) {
    throw new Error(
      `${source}: not a PEM private key (${(error as Error).message.replace(/\s+/g, " ")})`,
    );
  }
  const algorithm = algorithmOfKey(key, source);
  const publicKey = createPublicKey(key);
  const keyId = keyIdOf(publicKey);
  const ecdsa = algorithm === SignatureAlgorithm.ECDSA_P256_SHA256;
  return {
    keyId,
    algorithm,
    publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
    sign: (data) =>
      new Uint8Array(
        ecdsa ? sign("sha256", data, { key, dsaEncoding: "ieee-p1363" }) : sign(null, data, key),
      ),
  };
}

/** Reads and parses the signing key file at `path` (see {@link parseSigningKey}). */
export async function readSigningKey(path: string): Promise<SigningKey> {
  let pem: Buffer;
  try {
    pem = await readFile(path);
  } catch (error) {
    throw new Error(`cannot read the signing key ${path}: ${(error as Error).message}`);
  }
  return parseSigningKey(pem, path);
}

/**
 * Returns `value` (a stored projection's encoding, `origin_cluster` as it
 * will be stored) signed by `key` for `origin`: its signature record
 * replaced by a new one over the signed bytes (see `projection-signature.ts`).
 * Throws a TypeError when `value` is not a well-formed message.
 */
export function signStoredValue(value: Uint8Array, origin: string, key: SigningKey): Uint8Array {
  const parts = splitStoredValue(value);
  if (parts.problem !== undefined) throw new TypeError(parts.problem);
  const signature = create(ProjectionSignatureSchema, {
    keyId: key.keyId,
    algorithm: key.algorithm,
    signature: key.sign(signedBytes(origin, parts.content)),
  });
  return withSignature(value, signature);
}
