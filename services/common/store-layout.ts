/**
 * Where everything lives in the shared store, by key prefix: the store
 * prefix, the `clusters/` tree of every origin, and each origin's own
 * subtree `<prefix>/clusters/<origin>/`, under which that origin's registrar
 * writes everything it writes (its projections under `config/`, its export
 * election under `election/export/`). Per-origin etcd roles
 * (`aetherctl etcd-rbac`) grant write on exactly that subtree, so nothing a
 * registrar writes may live anywhere else.
 */

/** The store prefix used when none is configured. */
export const DEFAULT_STORE_PREFIX = "/aether/v1";

/**
 * Normalizes a configured prefix: it must start with `/`, and a trailing `/`
 * is dropped. Throws a TypeError for an empty or relative prefix.
 */
export function normalizePrefix(prefix: string): string {
  if (!prefix.startsWith("/")) {
    throw new TypeError(`store prefix must start with "/", got ${JSON.stringify(prefix)}`);
  }
  const trimmed = prefix.replace(/\/+$/, "");
  if (trimmed === "") {
    throw new TypeError("store prefix must not be the root");
  }
  return trimmed;
}

/** Returns the key prefix of everything under a normalized store prefix: `<prefix>/`. */
export function storeKeyPrefix(prefix: string): string {
  return `${prefix}/`;
}

/** Returns the key prefix under which every origin's subtree lives: `<prefix>/clusters/`. */
export function allOriginsKeyPrefix(prefix: string): string {
  return `${prefix}/clusters/`;
}

/**
 * Returns the key prefix of one origin's subtree, `<prefix>/clusters/<origin>/`:
 * the only keys that origin's registrar writes.
 */
export function originSubtreePrefix(prefix: string, origin: string): string {
  return `${allOriginsKeyPrefix(prefix)}${origin}/`;
}

/** Returns the name of one origin's export election: `<prefix>/clusters/<origin>/election/export`. */
export function exportElectionName(prefix: string, origin: string): string {
  return `${originSubtreePrefix(prefix, origin)}election/export`;
}

/**
 * Returns where releases before the per-origin subtree kept one origin's
 * export election, `<prefix>/election/<origin>/export`. A new candidate does
 * not lead while a candidate of an old release still holds a key there (see
 * the registrar's etcd election), so a rolling upgrade never has two leaders.
 */
export function legacyExportElectionName(prefix: string, origin: string): string {
  return `${prefix}/election/${origin}/export`;
}
