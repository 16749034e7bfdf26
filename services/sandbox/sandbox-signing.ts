/**
 * The sandbox's projection signing (the default; `--unsigned` turns it off):
 * a hub signing key (Ed25519, PEM PKCS#8, mode 0600) kept in one directory
 * (`.sandbox/signing/` by default) and reused by the next run while it
 * parses, and the `--origin-keys` file every importer verifies with (the
 * hub's public key), written anew on every start. Made with Node's `crypto`
 * (no openssl), so `--plaintext` signs too.
 */
import { generateKeyPairSync } from "node:crypto";
import { chmod, link, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseSigningKey, type SigningKey } from "../signing/signing-key.js";

/** Where the sandbox's signing files are, and the key's id. */
export interface SandboxSigning {
  /** The hub's private key (`--signing-key-file`). */
  readonly keyFile: string;
  /** The importers' `--origin-keys` file. */
  readonly originKeysFile: string;
  /** The hub key's id, as `aetherctl get` shows it. */
  readonly keyId: string;
  /** Whether the key of an earlier run was reused. */
  readonly reused: boolean;
}

/** Reads the key at `file`, or undefined when it is missing or not a usable key. */
async function readKey(file: string): Promise<SigningKey | undefined> {
  try {
    return parseSigningKey(await readFile(file), file);
  } catch {
    return undefined;
  }
}

/** Writes `text` to `file` atomically (a temporary file renamed over it). */
async function writeAtomic(file: string, text: string, mode: number): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, text, { mode });
  await chmod(temporary, mode);
  await rename(temporary, file);
}

/**
 * Makes the key at `keyFile`, or, when another sandbox made one meanwhile
 * (two starting at once), takes that one: the file appears whole (a hard
 * link of a finished temporary file) and only once. A corrupt file is
 * replaced.
 */
async function createKey(keyFile: string): Promise<SigningKey> {
  const pem = generateKeyPairSync("ed25519")
    .privateKey.export({ type: "pkcs8", format: "pem" })
    .toString();
  const temporary = `${keyFile}.${process.pid}.tmp`;
  await writeFile(temporary, pem, { mode: 0o600 });
  await chmod(temporary, 0o600);
  try {
    await link(temporary, keyFile);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const theirs = await readKey(keyFile);
    if (theirs !== undefined) return theirs;
    await rename(temporary, keyFile);
  } finally {
    await rm(temporary, { force: true });
  }
  return parseSigningKey(pem, keyFile);
}

/**
 * Makes (or reuses) the hub's signing key in `dir` and writes the origin
 * keys file naming its public key for `origin`.
 */
export async function ensureSandboxSigning(dir: string, origin: string): Promise<SandboxSigning> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const keyFile = join(dir, `${origin}-signing.key`);
  let key = await readKey(keyFile);
  const reused = key !== undefined;
  if (key === undefined) key = await createKey(keyFile);
  const originKeysFile = join(dir, "origin-keys.yaml");
  const indented = key.publicKeyPem.trim().split("\n").join("\n      ");
  await writeAtomic(
    originKeysFile,
    `# The origins' public keys the sandbox's importers verify projections with.\norigins:\n  ${origin}:\n    - |\n      ${indented}\n`,
    0o644,
  );
  return { keyFile, originKeysFile, keyId: key.keyId, reused };
}
