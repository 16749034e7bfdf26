/**
 * aetherctl's `--origin-keys PATH` (default `$AETHER_ORIGIN_KEYS`, read here
 * and nowhere else): the origins' public keys `get` and `list` verify
 * signatures with, locally, in the same file format as the registrar's and
 * the agent's flag (`services/signing/origin-keys.ts`). A file that cannot
 * be read or parsed is a usage error naming the flag or variable and the
 * file, never quoting a key.
 */
import { readFile } from "node:fs/promises";
import {
  createSignatureCheck,
  type SignatureCheck,
} from "../../services/common/signature-check.js";
import { UsageError } from "../../services/process/usage-error.js";
import { parseOriginKeys, verifyWithKey } from "../../services/signing/origin-keys.js";

/** The variable that supplies `--origin-keys` when the flag is not given. */
export const ORIGIN_KEYS_ENV = "AETHER_ORIGIN_KEYS";

/** Where the origin keys come from, and how a usage error names it. */
export interface OriginKeysSource {
  /** The file's path. */
  readonly path: string;
  /** `--origin-keys` or `$AETHER_ORIGIN_KEYS`. */
  readonly label: string;
}

/**
 * The origin keys' source: the flag's value, else the variable's (an empty
 * one is unset), else undefined (signatures are not checked). Pure.
 */
export function originKeysSource(
  flag: string | undefined,
  env: NodeJS.ProcessEnv,
): OriginKeysSource | undefined {
  if (flag !== undefined) return { path: flag, label: "--origin-keys" };
  const path = env[ORIGIN_KEYS_ENV];
  return path ? { path, label: `$${ORIGIN_KEYS_ENV}` } : undefined;
}

/**
 * Reads and parses the keys of `source` into the check `get` and `list`
 * report with: every signed projection is held to the file's keys (an origin
 * the file does not list has unknown keys). Rejects with a
 * {@link UsageError} of `command` naming the file when it cannot be read or
 * is not a valid origin-keys file.
 */
export async function loadOriginKeysCheck(
  source: OriginKeysSource,
  command: "get" | "list",
): Promise<SignatureCheck> {
  let text: string;
  try {
    text = await readFile(source.path, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new UsageError(`${source.label}: cannot read ${source.path} (${reason})`, command);
  }
  let keys: ReturnType<typeof parseOriginKeys>;
  try {
    keys = parseOriginKeys(text, source.path);
  } catch (error) {
    // parseOriginKeys names the file and the entry, and never quotes a key.
    throw new UsageError(`${source.label} ${(error as Error).message}`, command);
  }
  return createSignatureCheck({ keyring: () => keys, verify: verifyWithKey, require: true });
}
