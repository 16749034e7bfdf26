/**
 * Merges the status entries the registrar wants on an object (route
 * `status.parents`, policy `status.ancestors`) into the list the object has:
 * entries of other controllers are kept as they are, first; the registrar's
 * own entries (`controllerName` {@link STATUS_CONTROLLER_NAME}) are replaced;
 * a condition whose status did not change keeps its `lastTransitionTime`
 * (as `meta.SetStatusCondition` does). When the own entries would come out
 * equal to those the object has, there is nothing to write. Pure, no clock:
 * the time is passed in.
 */

import { isJsonObject, type JsonObject } from "./projector-fields.js";
import { STATUS_CONTROLLER_NAME } from "./status-reasons.js";

/** The longest condition message the Gateway API schema allows. */
const MAX_MESSAGE_LENGTH = 32_768;

/** A condition the registrar wants, before its times are set. */
export interface WantedCondition {
  /** `Accepted`, `ResolvedRefs` or the fleet summary's type (`fleet-condition.ts`). */
  readonly type: string;
  /** Whether the condition holds (`Unknown`: cannot tell yet). */
  readonly status: "True" | "False" | "Unknown";
  /** The upstream CamelCase reason. */
  readonly reason: string;
  /** A sentence for the author. */
  readonly message: string;
}

/** An entry the registrar wants: the reference (a parent or an ancestor) and its conditions. */
export interface WantedEntry {
  /** The `parentRef` or `ancestorRef`, with every field explicit. */
  readonly ref: JsonObject;
  /** The conditions, in the order written. */
  readonly conditions: readonly WantedCondition[];
}

/** Options of {@link mergeStatusEntries}. */
export interface MergeOptions {
  /** `parentRef` (routes) or `ancestorRef` (policies). */
  readonly refField: "parentRef" | "ancestorRef";
  /** The object's `metadata.generation`, written as each condition's `observedGeneration`. */
  readonly generation: number | undefined;
  /** The current time, RFC 3339 in whole seconds, for a condition whose status changed. */
  readonly now: string;
  /** The most entries the list may hold (the CRD's `maxItems`): own entries past it are left out. */
  readonly maxItems: number;
}

/**
 * The list to write: `current`'s entries of other controllers, then `wanted`
 * as own entries (times kept where the status is unchanged), capped at
 * `maxItems`; or undefined when the own entries equal those `current` holds
 * (same refs, conditions, reasons, messages and generations, in order), so
 * nothing is to be written. `current` is read leniently (not a list: empty).
 */
export function mergeStatusEntries(
  current: unknown,
  wanted: readonly WantedEntry[],
  options: MergeOptions,
): JsonObject[] | undefined {
  const list = Array.isArray(current) ? current.filter(isJsonObject) : [];
  const others = list.filter((entry) => entry.controllerName !== STATUS_CONTROLLER_NAME);
  const ours = list.filter((entry) => entry.controllerName === STATUS_CONTROLLER_NAME);
  const room = Math.max(0, options.maxItems - others.length);
  const next = wanted.slice(0, room).map((entry) => ownEntry(entry, ours, options));
  if (jsonEqual(next, ours)) return undefined;
  return [...others, ...next];
}

/** The own entry for `wanted`, its conditions' times kept from the same ref's current entry. */
function ownEntry(wanted: WantedEntry, ours: readonly JsonObject[], options: MergeOptions) {
  const before = ours.find((entry) => jsonEqual(entry[options.refField], wanted.ref));
  const conditions = Array.isArray(before?.conditions)
    ? before.conditions.filter(isJsonObject)
    : [];
  return {
    [options.refField]: wanted.ref,
    controllerName: STATUS_CONTROLLER_NAME,
    conditions: wanted.conditions.map((condition) => {
      const previous = conditions.find((c) => c.type === condition.type);
      const kept =
        previous?.status === condition.status && typeof previous.lastTransitionTime === "string";
      return {
        type: condition.type,
        status: condition.status,
        reason: condition.reason,
        message: condition.message.slice(0, MAX_MESSAGE_LENGTH),
        ...(options.generation === undefined ? {} : { observedGeneration: options.generation }),
        lastTransitionTime: kept ? (previous.lastTransitionTime as string) : options.now,
      };
    }),
  };
}

/**
 * Whether two JSON values are equal, object keys in any order (as the API
 * server may return them), lists in order. Cheaper than comparing canonical
 * texts: it runs for every projected object at every export run.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => jsonEqual(item, b[i]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  return keys.every((key) => Object.hasOwn(right, key) && jsonEqual(left[key], right[key]));
}
