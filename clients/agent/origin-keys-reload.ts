/**
 * What a re-read of the agent's `--origin-keys` file means, decided without
 * I/O: the keys it parses to replace the ones in force, or it is refused
 * (unreadable, or any bad entry: `parseOriginKeys` is all or nothing) and
 * the keys in force stay. A loaded file says which key ids it added and
 * removed, so that the agent re-subscribes only when a key was added (a
 * projection refused as `unknown_key` may pass now; a removal can make
 * nothing newly acceptable). Messages name the file and the entry, never a
 * key's text.
 */
import { type OriginKeys, parseOriginKeys } from "../../services/signing/origin-keys.js";

/** What reading the file gave: its text, or why it could not be read. */
export type KeysFileRead = { readonly text: string } | { readonly error: string };

/** The outcome of {@link decideReload}. */
export type KeysReload =
  /** The file parses to the same key ids per origin: nothing to do. */
  | { readonly kind: "unchanged" }
  /** The file parses to other keys: they are in force from now on. */
  | {
      readonly kind: "loaded";
      readonly keys: OriginKeys;
      /** The `origin/keyId` pairs it added, sorted. */
      readonly added: readonly string[];
      /** The `origin/keyId` pairs it removed, sorted. */
      readonly removed: readonly string[];
    }
  /** The file cannot be used; the keys in force stay. */
  | { readonly kind: "refused"; readonly problem: string };

/** Every key of `keys` as `origin/keyId`, sorted (key ids are public: hashes of public keys). */
export function keyIdsOf(keys: OriginKeys): string[] {
  const ids: string[] = [];
  for (const origin of keys.origins) {
    for (const keyId of keys.keysOf(origin)?.keys() ?? []) ids.push(`${origin}/${keyId}`);
  }
  return ids.sort();
}

/**
 * Decides what a re-read of the file at `path` does to the keys in force
 * (`current`). Pure.
 */
export function decideReload(current: OriginKeys, read: KeysFileRead, path: string): KeysReload {
  if ("error" in read) {
    return { kind: "refused", problem: `cannot read ${path}: ${read.error}` };
  }
  let next: OriginKeys;
  try {
    next = parseOriginKeys(read.text, path);
  } catch (error) {
    return { kind: "refused", problem: (error as Error).message };
  }
  const before = keyIdsOf(current);
  const after = keyIdsOf(next);
  const had = new Set(before);
  const has = new Set(after);
  const added = after.filter((id) => !had.has(id));
  const removed = before.filter((id) => !has.has(id));
  if (added.length === 0 && removed.length === 0) return { kind: "unchanged" };
  return { kind: "loaded", keys: next, added, removed };
}
