/**
 * What a change of one of the export controller's own keys is, as its watch
 * reports it: the controller's own write (which it expects), a change its
 * own write in flight replaces, no change at all, or someone else's write,
 * which the controller repairs. Pure and synchronous, tested with tables.
 *
 * The controller records the change it expects before each write and drops
 * the expectation when the watch reports that change. A watch reports the
 * changes of a key in revision order, so while an expectation is pending,
 * every other change of that key came before the write (the write replaces
 * it, or, when the write fails, the view is listed again anyway), and a
 * change after the write arrives only once its own event has cleared the
 * expectation. That also covers an event that arrives before the write's
 * promise resolves.
 */
import type { ExportedProjection } from "./export-plan.js";

/** A change of one own key, reduced to what the classification reads. */
export type OwnKeyChange =
  | {
      /** The key was written. */
      readonly type: "put";
      /** The content digest of the value written (see `contentDigest`). */
      readonly digest: string;
      /** The version of the value written. */
      readonly version: string;
      /** Who signed the value written (see `export-seal.ts`). */
      readonly seal: string;
    }
  | {
      /** The key was deleted. */
      readonly type: "delete";
    };

/** The verdict of {@link classifyOwnKeyChange}. */
export type OwnKeyVerdict =
  /** The event of the controller's pending write: the view now holds it. */
  | "own"
  /** A change before the controller's pending write, which replaces it: nothing to do. */
  | "overtaken"
  /** The store holds exactly what the view says: nothing to do. */
  | "unchanged"
  /** Someone else changed the key: the view takes the change, and the key is repaired. */
  | "foreign";

/**
 * Classifies `change` of a key whose view entry is `known` (undefined: the
 * view holds no projection of the service) while the controller expects
 * `expected` of it (undefined: no write of the key is pending): `own` when
 * it is the expected change (same type; for a put, same digest, version
 * and seal), else `overtaken` while a write is pending; without one,
 * `unchanged` when it leaves the key as the view has it, else `foreign`.
 */
export function classifyOwnKeyChange(
  change: OwnKeyChange,
  known: ExportedProjection | undefined,
  expected: OwnKeyChange | undefined,
): OwnKeyVerdict {
  if (expected !== undefined) return sameChange(change, expected) ? "own" : "overtaken";
  if (change.type === "delete") return known === undefined ? "unchanged" : "foreign";
  return known !== undefined && sameChange(change, { type: "put", ...known })
    ? "unchanged"
    : "foreign";
}

/** Whether `a` and `b` are the same change: both deletes, or puts of the same digest, version and seal. */
function sameChange(a: OwnKeyChange, b: OwnKeyChange): boolean {
  if (a.type === "delete" || b.type === "delete") return a.type === b.type;
  return a.digest === b.digest && a.version === b.version && a.seal === b.seal;
}

/**
 * What a repair undid, the label of `aether_config_export_repairs_total`:
 * `put` (another writer's content under a service the controller exports),
 * `delete` (another writer deleted a service it exports) and `foreign_put`
 * (another writer put a service it does not export).
 */
export type RepairKind = "put" | "delete" | "foreign_put";

/** Every {@link RepairKind}, in the order metrics list them. */
export const REPAIR_KINDS: readonly RepairKind[] = ["put", "delete", "foreign_put"];

/**
 * The kind of repair a write of a service someone else changed makes: a put
 * over a stored projection (`isNew` false) undoes a foreign put, a put of a
 * service the view lacks (`isNew`) undoes a foreign delete, and a delete
 * removes a foreign put of a service not exported.
 */
export function repairKindOf(
  write: { readonly type: "put"; readonly isNew: boolean } | { readonly type: "delete" },
): RepairKind {
  if (write.type === "delete") return "foreign_put";
  return write.isNew ? "delete" : "put";
}
