/**
 * The signing benchmark's keys, made at run time in its temporary directory
 * (never committed): the hub's Ed25519 private key (PEM PKCS#8, mode 0600,
 * `--signing-key-file`) and the importers' `--origin-keys` file listing its
 * public key for the `hub` origin.
 */
import { generateKeyPairSync } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseSigningKey, type SigningKey } from "../../services/signing/signing-key.js";
import { originKeysText } from "../../test/support/signing-keys.js";

/** The files a signed leg passes to the registrars and agents, and the key itself. */
export interface BenchKeys {
  /** The hub's `--signing-key-file`. */
  readonly keyFile: string;
  /** The spoke's and the agents' `--origin-keys`. */
  readonly originKeysFile: string;
  /** The same key, parsed (for the in-process figures). */
  readonly key: SigningKey;
}

/** Generates a new Ed25519 key for `origin` and writes both files into `dir`. */
export async function makeBenchKeys(dir: string, origin: string): Promise<BenchKeys> {
  const pem = generateKeyPairSync("ed25519")
    .privateKey.export({ type: "pkcs8", format: "pem" })
    .toString();
  const keyFile = join(dir, `${origin}-signing.key`);
  await writeFile(keyFile, pem, { mode: 0o600 });
  const key = parseSigningKey(pem, keyFile);
  const originKeysFile = join(dir, "origin-keys.json");
  await writeFile(originKeysFile, originKeysText({ [origin]: [key] }));
  return { keyFile, originKeysFile, key };
}
