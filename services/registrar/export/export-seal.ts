/**
 * Who signed a stored own-origin value, as the export controller judges it
 * to decide whether the value is what it wants (see `export-plan.ts`): its
 * "seal" is the key id of a signature that verifies under the controller's
 * signing key in force, `""` for an unsigned value, and `?` followed by the
 * key id for any other signature (an old key's, a forged one, a value that
 * does not split). The controller wants the seal of its key (`""` without
 * one), so a forged or unsigned value under its keys is repaired, and a new
 * key re-signs every value.
 */
import { createPublicKey } from "node:crypto";
import { signedBytes, splitStoredValue } from "../../common/projection-signature.js";
import { type NodeOriginKey, verifyWithKey } from "../../signing/origin-keys.js";
import type { SigningKey } from "../../signing/signing-key.js";

/** The seal of a stored value; see the module comment. */
export type SealOf = (value: Uint8Array) => string;

/** The seal the controller wants its values to have with `key` in force. */
export function wantedSeal(key: SigningKey | undefined): string {
  return key?.keyId ?? "";
}

/**
 * The seal reader of values stored under `origin`, verifying with the
 * signing key `key()` returns at each call (undefined: none).
 */
export function sealReader(origin: string, key: () => SigningKey | undefined): SealOf {
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
  return (value) => {
    const parts = splitStoredValue(value);
    if (parts.problem !== undefined) return "?";
    const { signature } = parts;
    if (signature === undefined) return "";
    const signing = key();
    if (signing === undefined || signature.keyId !== signing.keyId) return `?${signature.keyId}`;
    const verified =
      signature.algorithm === signing.algorithm &&
      verifyWithKey(verifierOf(signing), signedBytes(origin, parts.content), signature.signature);
    return verified ? signing.keyId : `?${signature.keyId}`;
  };
}
