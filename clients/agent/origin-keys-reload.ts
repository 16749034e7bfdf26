/**
 * What an accepted re-read of the agent's `--origin-keys` file means,
 * decided without I/O (the file is followed by the shared
 * `services/signing/origin-keys-source.ts`; a refused re-read never gets
 * here, the keys in force stay): which key ids it added and removed, and
 * whether the follower must resync. Only an added key calls for a resync (a
 * fresh snapshot of the same dependency set): a projection refused as
 * `unknown_key` may pass now. A removal makes nothing newly acceptable, so
 * it asks for nothing and revokes nothing held: the agent ranks what was
 * admitted on arrival (the import policy's `winners` in `agent.ts`); what
 * arrives next, and what a restart restores from the cache, is judged with
 * the keys in force then.
 */
import type { OriginKeys } from "../../services/signing/origin-keys.js";

/** The outcome of {@link decideReload}. */
export type KeysReload =
  /** The same key ids per origin: nothing to do. */
  | { readonly kind: "unchanged" }
  /** Other key ids: logged and counted; `resync` when a key was added. */
  | {
      readonly kind: "changed";
      /** The `origin/keyId` pairs added, sorted. */
      readonly added: readonly string[];
      /** The `origin/keyId` pairs removed, sorted. */
      readonly removed: readonly string[];
      /** Whether the follower must take a fresh snapshot (a key was added). */
      readonly resync: boolean;
    };

/** Every key of `keys` as `origin/keyId`, sorted (key ids are public: hashes of public keys). */
export function keyIdsOf(keys: OriginKeys): string[] {
  const ids: string[] = [];
  for (const origin of keys.origins) {
    for (const keyId of keys.keysOf(origin)?.keys() ?? []) ids.push(`${origin}/${keyId}`);
  }
  return ids.sort();
}

/** Decides what replacing the keys in force (`previous`) with a re-read's (`next`) does. Pure. */
export function decideReload(previous: OriginKeys, next: OriginKeys): KeysReload {
  const before = keyIdsOf(previous);
  const after = keyIdsOf(next);
  const had = new Set(before);
  const has = new Set(after);
  const added = after.filter((id) => !had.has(id));
  const removed = before.filter((id) => !has.has(id));
  if (added.length === 0 && removed.length === 0) return { kind: "unchanged" };
  return { kind: "changed", added, removed, resync: added.length > 0 };
}
