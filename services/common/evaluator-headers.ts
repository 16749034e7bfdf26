/**
 * Header handling for the request evaluator: the canonical header map
 * (case-insensitive names, several values per name) and the set / add /
 * remove operations of HeaderModifier filters. Pure, no I/O.
 */
import type { HeaderModifier } from "../../gen/aether/registry/v1/projection_pb.js";
import type { HeaderChange, HeaderInput, HeaderMap } from "./evaluator-types.js";

/**
 * Converts headers as a caller gives them into a {@link HeaderMap}: names are
 * lower-cased, values keep their arrival order, and names that differ only in
 * case are merged.
 */
export function normalizeHeaders(input: HeaderInput | undefined): HeaderMap {
  const out: Record<string, string[]> = {};
  if (input === undefined) return out;
  const pairs: [string, string][] = [];
  if (Array.isArray(input)) {
    for (const [name, value] of input as readonly (readonly [string, string])[]) {
      pairs.push([name, value]);
    }
  } else {
    for (const [name, value] of Object.entries(input)) {
      for (const v of typeof value === "string" ? [value] : value) pairs.push([name, v]);
    }
  }
  for (const [name, value] of pairs) {
    const key = name.toLowerCase();
    const values = out[key];
    if (values === undefined) out[key] = [value];
    else values.push(value);
  }
  return out;
}

/**
 * Returns the value of header `name` (case-insensitive) with several values
 * joined by `,`, or undefined when the header is absent.
 */
export function headerValue(headers: HeaderMap, name: string): string | undefined {
  const values = headers[name.toLowerCase()];
  return values === undefined ? undefined : values.join(",");
}

/**
 * Lists the operations of a HeaderModifier in the order they are applied:
 * every `set`, then every `add`, then every `remove`. Names are lower-cased.
 */
export function headerModifierChanges(modifier: HeaderModifier): HeaderChange[] {
  const changes: HeaderChange[] = [];
  for (const { name, value } of modifier.set) {
    changes.push({ op: "set", name: name.toLowerCase(), value });
  }
  for (const { name, value } of modifier.add) {
    changes.push({ op: "add", name: name.toLowerCase(), value });
  }
  for (const name of modifier.remove) {
    changes.push({ op: "remove", name: name.toLowerCase(), value: "" });
  }
  return changes;
}

/**
 * Applies header operations to a copy of `headers` and returns it: `set`
 * replaces every value of the header, `add` appends a value (creating the
 * header), `remove` deletes it. Names are matched case-insensitively.
 */
export function applyHeaderChanges(
  headers: HeaderMap | HeaderInput,
  changes: readonly HeaderChange[],
): HeaderMap {
  const out: Record<string, readonly string[]> = { ...normalizeHeaders(headers as HeaderInput) };
  for (const change of changes) {
    const name = change.name.toLowerCase();
    if (change.op === "set") out[name] = [change.value];
    else if (change.op === "add") out[name] = [...(out[name] ?? []), change.value];
    else delete out[name];
  }
  return out;
}
