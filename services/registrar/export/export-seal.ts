/**
 * Who signed a stored own-origin value, as the export controller judges it
 * to decide whether the value is what it wants (see `export-plan.ts`): its
 * "seal" is the key id of a signature that verifies under the controller's
 * signing key in force, `""` for an unsigned value, and `?` followed by the
 * key id for any other signature (an old key's, a forged one, a value that
 * does not split). The controller wants the seal of its key (`""` without
 * one), so a forged or unsigned value under its keys is repaired, and a new
 * key re-signs every value.
 *
 * The values the controller signed itself are known by identity (the store
 * hands the written bytes back in its watch events and listings), so its
 * own writes are not verified again.
 */
import { createPublicKey } from "node:crypto";
import { signedBytes, splitStoredValue } from "../../common/projection-signature.js";
import { type NodeOriginKey, verifyWithKey } from "../../signing/origin-keys.js";
import { type SigningKey, signStoredValue } from "../../signing/signing-key.js";

/** The seal of a stored value; see the module comment. */
export type SealOf = (value: Uint8Array) => string;

/** The seal the controller wants its values to have with `key` in force. */
export function wantedSeal(key: SigningKey | undefined): string {
  return key?.keyId ?? "";
}

/** Signs values and reads seals for one origin; see the module comment. */
export interface Sealer {
  /** The seal of a stored value, verified under the key in force. */
  readonly sealOf: SealOf;
  /** Signs a stamped value with `key` (see `signStoredValue`), remembering it as sealed by it. */
  sign(value: Uint8Array, key: SigningKey): Uint8Array;
}

/**
 * The sealer of values stored under `origin`, verifying with the signing key
 * `key()` returns at each call (undefined: none).
 */
export function createSealer(origin: string, key: () => SigningKey | undefined): Sealer {
  /** The values this sealer signed, by identity, and the key id they were signed with. */
  const signed = new WeakMap<Uint8Array, string>();
  let verifier: { signing: SigningKey; key: NodeOriginKey } | undefined;
  const verifierOf = (signing: SigningKey): NodeOriginKey => {
    if (verifier?.signing !== signing) {
      const publicKey = createPublicKey({ key: signing.publicKeyPem, format: "pem" });
      verifier = {
        signing,
        key: { keyId: signing.keyId, algorithm: signing.algorithm, key: publicKey },
      };
    }
    return verifier.key;
  };
  const sealOf: SealOf = (value) => {
    const signing = key();
    const own = signed.get(value);
    if (own !== undefined && own === signing?.keyId) return own;
    const parts = splitStoredValue(value);
    if (parts.problem !== undefined) return "?";
    const { signature } = parts;
    if (signature === undefined) return "";
    if (signing === undefined || signature.keyId !== signing.keyId) return `?${signature.keyId}`;
    const verified =
      signature.algorithm === signing.algorithm &&
      verifyWithKey(verifierOf(signing), signedBytes(origin, parts.content), signature.signature);
    return verified ? signing.keyId : `?${signature.keyId}`;
  };
  return {
    sealOf,
    sign(value, signing) {
      const out = signStoredValue(value, origin, signing);
      signed.set(out, signing.keyId);
      return out;
    },
  };
}

/** The seal reader of a {@link createSealer} for `origin` and `key`. */
export function sealReader(origin: string, key: () => SigningKey | undefined): SealOf {
  return createSealer(origin, key).sealOf;
}
