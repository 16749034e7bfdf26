/**
 * An importer's verdict on a projection's signature: verified, unsigned,
 * signed but not checkable, or rejected as `unsigned`, `unknown_key` or
 * `bad_signature`. The decision is pure; the cryptography is injected (the
 * registrar and the agent verify with Node's `crypto`, see
 * `services/runtime/signing/`), and so are the keys, which a caller re-reads
 * when their file changes.
 *
 * The rules:
 * - A value that cannot be split into content and one signature is `bad_signature`.
 * - Unsigned: rejected as `unsigned` when signatures are required, else it passes.
 * - Signed with a key id the origin's keys do not list: `unknown_key` when
 *   signatures are required or the origin has keys at all; otherwise it
 *   passes unchecked (nothing to check it with).
 * - Signed with a listed key: verified, or `bad_signature` (an algorithm
 *   other than the key's is a bad signature too).
 *
 * Each received value is verified once: {@link SignatureCheck.judgeValue}
 * remembers its verdict per value object (its stored bytes, or its decoded
 * message) together with the keys object it was judged with, and judges it
 * again only under other keys (a re-read keys file is a new object: a
 * removed key stops verifying, an added one admits what it refused). An
 * importer that re-resolves everything it holds on each change so verifies
 * only what changed.
 */
import type {
  ServiceConfigProjection,
  SignatureAlgorithm,
} from "../../gen/aether/registry/v1/projection_pb.js";
import {
  algorithmName,
  type SignedParts,
  signedBytes,
  splitDecoded,
  splitStoredValue,
} from "./projection-signature.js";

/** The import rejection reasons a signature check gives. */
export type SignatureRejectionReason = "unsigned" | "unknown_key" | "bad_signature";

/** A public key of an origin, as the check sees it (the verifier knows the rest). */
export interface OriginKey {
  /** Its key id (see `ProjectionSignature.key_id`). */
  readonly keyId: string;
  /** The one algorithm it verifies. */
  readonly algorithm: SignatureAlgorithm;
}

/** The public keys an importer holds, by origin. */
export interface OriginKeyring<K extends OriginKey = OriginKey> {
  /** The keys of `origin` by key id; undefined when it has none. */
  keysOf(origin: string): ReadonlyMap<string, K> | undefined;
}

/** The outcome of {@link SignatureCheck.judge}. */
export type SignatureVerdict =
  /** Signed with one of the origin's keys, and the signature holds. */
  | { readonly kind: "verified"; readonly keyId: string }
  /** Not signed, and signatures are not required. */
  | { readonly kind: "unsigned" }
  /** Signed, but the importer has no key of the origin to check it with (not required). */
  | { readonly kind: "unchecked"; readonly keyId: string }
  /** Refused: the import rejection's reason and sentence. */
  | {
      readonly kind: "rejected";
      readonly reason: SignatureRejectionReason;
      readonly message: string;
      readonly keyId?: string;
    };

/** Options of {@link createSignatureCheck}. */
export interface SignatureCheckOptions<K extends OriginKey> {
  /**
   * The keys in force now (called on every judgement, so a re-read file
   * applies at once): a new object whenever the keys change, never one
   * changed in place (remembered verdicts hold for the object they were
   * judged with, see {@link SignatureCheck.judgeValue}).
   */
  readonly keyring: () => OriginKeyring<K>;
  /** Whether `signature` over `data` holds under `key`; must not throw. */
  readonly verify: (key: K, data: Uint8Array, signature: Uint8Array) => boolean;
  /** Whether an unsigned projection, or one from an origin without keys, is refused. */
  readonly require: boolean;
}

/**
 * A received value: its stored bytes, or its decoded projection (a whole
 * message). It must not be changed once judged (importers never change
 * what they receive): its verdict is remembered by identity.
 */
export type ReceivedValue = Uint8Array | ServiceConfigProjection;

/** A configured signature check; see the module comment. */
export interface SignatureCheck {
  /** Whether signatures are required. */
  readonly required: boolean;
  /** Judges the signature of `origin`'s projection of `service`, split into `parts`. */
  judge(origin: string, service: string, parts: SignedParts): SignatureVerdict;
  /**
   * Judges `value`, split with `splitStoredValue` (bytes) or `splitDecoded`
   * (a message), as {@link SignatureCheck.judge} does. The verdict is
   * remembered for that object (weakly: forgotten with it) and given again,
   * with nothing split or verified, while the keyring is the same object and
   * the origin and service are the same; otherwise `value` is judged again.
   */
  judgeValue(origin: string, service: string, value: ReceivedValue): SignatureVerdict;
}

/** A remembered verdict and what it was judged with. */
interface RememberedVerdict {
  readonly keys: OriginKeyring<OriginKey>;
  readonly origin: string;
  readonly service: string;
  readonly verdict: SignatureVerdict;
}

/** Creates a signature check; see the module comment. */
export function createSignatureCheck<K extends OriginKey>(
  options: SignatureCheckOptions<K>,
): SignatureCheck {
  const { require } = options;
  const remembered = new WeakMap<ReceivedValue, RememberedVerdict>();

  /** The verdict on `parts` under `keyring`. */
  function judgeWith(
    keyring: OriginKeyring<K>,
    origin: string,
    service: string,
    parts: SignedParts,
  ): SignatureVerdict {
    const what = `projection of ${service} from ${origin}`;
    if (parts.problem !== undefined) {
      return { kind: "rejected", reason: "bad_signature", message: `${what}: ${parts.problem}` };
    }
    const { signature } = parts;
    if (signature === undefined) {
      if (!require) return { kind: "unsigned" };
      return {
        kind: "rejected",
        reason: "unsigned",
        message: `${what} is not signed, and this importer requires signatures`,
      };
    }
    const { keyId } = signature;
    const keys = keyring.keysOf(origin);
    const key = keys?.get(keyId);
    if (key === undefined) {
      if (!require && (keys === undefined || keys.size === 0)) return { kind: "unchecked", keyId };
      const known = keys === undefined || keys.size === 0 ? "none" : [...keys.keys()].join(", ");
      return {
        kind: "rejected",
        reason: "unknown_key",
        keyId,
        message: `${what} is signed with key ${JSON.stringify(keyId)}, which is not among ${origin}'s public keys (known: ${known})`,
      };
    }
    if (signature.algorithm !== key.algorithm) {
      return {
        kind: "rejected",
        reason: "bad_signature",
        keyId,
        message: `${what} names algorithm ${algorithmName(signature.algorithm)} for key ${JSON.stringify(keyId)}, an ${algorithmName(key.algorithm)} key`,
      };
    }
    if (!options.verify(key, signedBytes(origin, parts.content), signature.signature)) {
      return {
        kind: "rejected",
        reason: "bad_signature",
        keyId,
        message: `${what}: the signature by key ${JSON.stringify(keyId)} does not match its bytes (altered after signing, or signed for another origin)`,
      };
    }
    return { kind: "verified", keyId };
  }

  return {
    required: require,
    judge: (origin, service, parts) => judgeWith(options.keyring(), origin, service, parts),
    judgeValue(origin, service, value) {
      const keys = options.keyring();
      const last = remembered.get(value);
      if (last?.keys === keys && last.origin === origin && last.service === service) {
        return last.verdict;
      }
      const parts = value instanceof Uint8Array ? splitStoredValue(value) : splitDecoded(value);
      const verdict = judgeWith(keys, origin, service, parts);
      remembered.set(value, { keys, origin, service, verdict });
      return verdict;
    },
  };
}
