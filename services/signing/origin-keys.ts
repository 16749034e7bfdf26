/**
 * The origins' public keys an importer verifies signatures with
 * (`--origin-keys`): a YAML or JSON file mapping each origin to one or more
 * PEM SPKI public keys (several while a key rotates):
 *
 * ```yaml
 * origins:
 *   hub:
 *     - |
 *       -----BEGIN PUBLIC KEY-----
 *       MCowBQYDK2VwAyEA…
 *       -----END PUBLIC KEY-----
 * ```
 *
 * Parsing is all or nothing: a file with any bad entry is refused with a
 * sentence naming the origin and the entry (never a key's text), so a
 * caller that re-reads the file keeps the keys it had.
 */
import { createPublicKey, type KeyObject, verify } from "node:crypto";
import { load } from "js-yaml";
import { SignatureAlgorithm } from "../../gen/aether/registry/v1/projection_pb.js";
import type { OriginKey, OriginKeyring } from "../common/signature-check.js";
import { algorithmOfKey, keyIdOf } from "./key-algorithm.js";

/** One origin's public key, ready to verify with. */
export interface NodeOriginKey extends OriginKey {
  /** The key itself. */
  readonly key: KeyObject;
}

/** A parsed `--origin-keys` file. */
export interface OriginKeys extends OriginKeyring<NodeOriginKey> {
  /** The origins with keys, sorted. */
  readonly origins: readonly string[];
  /** How many keys in all. */
  readonly size: number;
}

/** An empty keyring (no `--origin-keys`). */
export const NO_ORIGIN_KEYS: OriginKeys = {
  origins: [],
  size: 0,
  keysOf: () => undefined,
};

const PUBLIC_KEY_PEM =
  /^\s*-----BEGIN PUBLIC KEY-----[A-Za-z0-9+/=\s]+-----END PUBLIC KEY-----\s*$/;

/**
 * Parses the text of an origin-keys file read from `source`. Throws an Error
 * naming `source` and the offending entry when anything is wrong.
 */
export function parseOriginKeys(text: string, source: string): OriginKeys {
  let document: unknown;
  try {
    document = load(text, { filename: source, json: true });
  } catch (error) {
    throw new Error(`${source}: not YAML or JSON: ${(error as Error).message.split("\n")[0]}`);
  }
  const origins = (document as { origins?: unknown } | null)?.origins;
  if (origins === null || typeof origins !== "object" || Array.isArray(origins)) {
    throw new Error(
      `${source}: expected a map "origins" of origin names to lists of PEM public keys`,
    );
  }
  const byOrigin = new Map<string, Map<string, NodeOriginKey>>();
  let size = 0;
  for (const [origin, list] of Object.entries(origins)) {
    if (!Array.isArray(list) || list.length === 0) {
      throw new Error(`${source}: origins.${origin} must be a non-empty list of PEM public keys`);
    }
    const keys = new Map<string, NodeOriginKey>();
    for (const [index, pem] of list.entries()) {
      const where = `${source}: origins.${origin}[${index}]`;
      if (typeof pem !== "string" || !PUBLIC_KEY_PEM.test(pem)) {
        throw new Error(`${where} is not one PEM public key (-----BEGIN PUBLIC KEY-----)`);
      }
      let key: KeyObject;
      try {
        key = createPublicKey({ key: pem, format: "pem" });
      } catch (error) {
        throw new Error(`${where} does not parse: ${(error as Error).message}`);
      }
      const algorithm = algorithmOfKey(key, where);
      const keyId = keyIdOf(key);
      if (!keys.has(keyId)) size++;
      keys.set(keyId, { keyId, algorithm, key });
    }
    byOrigin.set(origin, keys);
  }
  return {
    origins: [...byOrigin.keys()].sort(),
    size,
    keysOf: (origin) => byOrigin.get(origin),
  };
}

/** Whether `signature` over `data` holds under `key` (never throws). */
export function verifyWithKey(
  key: NodeOriginKey,
  data: Uint8Array,
  signature: Uint8Array,
): boolean {
  try {
    if (key.algorithm === SignatureAlgorithm.ECDSA_P256_SHA256) {
      return verify("sha256", data, { key: key.key, dsaEncoding: "ieee-p1363" }, signature);
    }
    return verify(null, data, key.key, signature);
  } catch {
    return false;
  }
}
