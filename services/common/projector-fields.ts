/**
 * Defensive readers for untrusted Kubernetes JSON, used by the projector. Every
 * reader takes the field path it reads (for example
 * `spec.rules[1].matches[0].path.value`) and throws a {@link FieldError} whose
 * message names that path when the value has the wrong type or breaks a
 * constraint. Pure, no I/O.
 */
import { parseVersion } from "./projection-version.js";

/** A JSON object as read from a manifest: string keys, unknown values. */
export type JsonObject = Readonly<Record<string, unknown>>;

/**
 * The error the projector throws while reading a route: a machine-readable
 * snake_case `reason` and a sentence naming the offending field path. The
 * projector turns it into a route rejection; it never escapes the projector.
 */
export class FieldError extends Error {
  /** The machine-readable reason, for example `invalid_regex`. */
  readonly reason: string;

  /** Creates the error with its reason and message. */
  constructor(reason: string, message: string) {
    super(message);
    this.name = "FieldError";
    this.reason = reason;
  }
}

/**
 * The reason and message of an error thrown while reading an object: a
 * FieldError's own, `invalid_object` for anything else (a bug or a value no
 * reader expected), so a caller can reject the object instead of crashing.
 */
export function problemOfError(error: unknown): { reason: string; message: string } {
  if (error instanceof FieldError) return { reason: error.reason, message: error.message };
  const detail = error instanceof Error ? error.message : String(error);
  return { reason: "invalid_object", message: `the object could not be read: ${detail}` };
}

/** Throws a {@link FieldError} with `reason` and `message`. */
export function fail(reason: string, message: string): never {
  throw new FieldError(reason, message);
}

/** Reports whether `value` is a plain JSON object (not null, not an array). */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Describes the JSON type of `value` for error messages (`a number`, `an array`, …). */
export function describeType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}

/** Quotes `text` for a message, shortened to at most 80 characters. */
export function quote(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text);
}

/**
 * Returns `value` as a JSON object, or throws `invalid_object` naming `path`
 * (saying it is required when it is absent).
 */
export function asObject(value: unknown, path: string): JsonObject {
  if (value === undefined) fail("invalid_object", `${path} is required`);
  if (!isJsonObject(value)) {
    fail("invalid_object", `${path} must be an object, not ${describeType(value)}`);
  }
  return value;
}

/**
 * Returns the value of `key`, treating an explicit JSON `null` as absent (as
 * the Kubernetes API server does).
 */
export function field(object: JsonObject, key: string): unknown {
  const value = Object.hasOwn(object, key) ? object[key] : undefined;
  return value === null ? undefined : value;
}

/** The fields an object may carry: the modelled ones and the known but unsupported ones. */
export interface KnownFields {
  /** Fields the projector reads. */
  readonly supported: readonly string[];
  /**
   * Fields the Gateway API defines that the contract does not carry, each
   * with why (a clause for the rejection message; empty for no reason given).
   */
  readonly unsupported?: Readonly<Record<string, string>>;
}

/**
 * Throws `unsupported_field` for the first key of `object` (in sorted order,
 * so the message does not depend on key order) that is not a supported
 * field. A route that sets a field the projection cannot carry is rejected
 * rather than silently projected with different behaviour.
 */
export function checkFields(object: JsonObject, path: string, known: KnownFields): void {
  const extra = Object.keys(object)
    .filter((key) => !known.supported.includes(key) && field(object, key) !== undefined)
    .sort();
  const key = extra[0];
  if (key === undefined) return;
  const why = known.unsupported === undefined ? undefined : field(known.unsupported, key);
  if (typeof why === "string") {
    const clause = why === "" ? "" : `: ${why}`;
    fail("unsupported_field", `${path}.${key} is not supported by the projection${clause}`);
  }
  fail("unsupported_field", `${path}.${key} is not a known field`);
}

/** Length bounds of a string field. */
export interface StringBounds {
  /** The minimum length (default 0). */
  readonly min?: number;
  /** The maximum length. */
  readonly max?: number;
}

/**
 * Reads an optional string field. Throws `invalid_object` when it is not a
 * string and `invalid_value` when it breaks `bounds`.
 */
export function optionalString(
  object: JsonObject,
  key: string,
  path: string,
  bounds: StringBounds = {},
): string | undefined {
  const value = optionalOfType(object, key, path, isString, "a string");
  if (value !== undefined) checkLength(value, `${path}.${key}`, bounds);
  return value;
}

/**
 * Reads an optional field that `guard` accepts; throws `invalid_object` saying
 * it must be `expected` otherwise.
 */
function optionalOfType<T>(
  object: JsonObject,
  key: string,
  path: string,
  guard: (value: unknown) => value is T,
  expected: string,
): T | undefined {
  const value = field(object, key);
  if (value === undefined) return undefined;
  if (!guard(value)) {
    const actual = typeof value === "number" ? `the number ${value}` : describeType(value);
    fail("invalid_object", `${path}.${key} must be ${expected}, not ${actual}`);
  }
  return value;
}

function isString(value: unknown): value is string {
  return typeof value === "string";
}

function isInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value);
}

function isBoolean(value: unknown): value is boolean {
  return typeof value === "boolean";
}

/**
 * Reads an optional nested object and checks its fields against `known`.
 * Throws `invalid_object` when it is not an object.
 */
export function optionalObject(
  object: JsonObject,
  key: string,
  path: string,
  known: KnownFields,
): JsonObject | undefined {
  const value = field(object, key);
  if (value === undefined) return undefined;
  const at = `${path}.${key}`;
  const nested = asObject(value, at);
  checkFields(nested, at, known);
  return nested;
}

/** Reads a required string field; like {@link optionalString} but absence is `invalid_object`. */
export function requiredString(
  object: JsonObject,
  key: string,
  path: string,
  bounds: StringBounds = {},
): string {
  const value = optionalString(object, key, path, bounds);
  if (value === undefined) fail("invalid_object", `${path}.${key} is required`);
  return value;
}

/** Throws `invalid_value` when `value` is shorter or longer than `bounds` allow. */
export function checkLength(value: string, path: string, bounds: StringBounds): void {
  if (bounds.min !== undefined && value.length < bounds.min) {
    fail(
      "invalid_value",
      bounds.min === 1
        ? `${path} must not be empty`
        : `${path} must be at least ${bounds.min} characters long`,
    );
  }
  if (bounds.max !== undefined && value.length > bounds.max) {
    fail("invalid_value", `${path} must be at most ${bounds.max} characters long`);
  }
}

/** Inclusive bounds of an integer field, and the reason to report when they are broken. */
export interface IntegerBounds {
  /** The minimum value. */
  readonly min: number;
  /** The maximum value. */
  readonly max: number;
  /** The rejection reason for an out-of-range value (default `invalid_value`). */
  readonly reason?: string;
}

/**
 * Reads an optional integer field. Throws `invalid_object` when it is not an
 * integer and `bounds.reason` (default `invalid_value`) when it is out of range.
 */
export function optionalInteger(
  object: JsonObject,
  key: string,
  path: string,
  bounds: IntegerBounds,
): number | undefined {
  const value = optionalOfType(object, key, path, isInteger, "an integer");
  if (value !== undefined && (value < bounds.min || value > bounds.max)) {
    fail(
      bounds.reason ?? "invalid_value",
      `${path}.${key} is ${value}; it must be between ${bounds.min} and ${bounds.max}`,
    );
  }
  return value;
}

/** Reads an optional boolean field; throws `invalid_object` when it is not a boolean. */
export function optionalBoolean(
  object: JsonObject,
  key: string,
  path: string,
): boolean | undefined {
  return optionalOfType(object, key, path, isBoolean, "a boolean");
}

/**
 * Reads an optional list field (absent reads as empty). Throws
 * `invalid_object` when it is not an array and `invalid_value` when it has more
 * than `maxItems` entries.
 */
export function optionalList(
  object: JsonObject,
  key: string,
  path: string,
  maxItems: number,
): readonly unknown[] {
  const value = field(object, key);
  if (value === undefined) return [];
  const at = `${path}.${key}`;
  if (!Array.isArray(value)) {
    fail("invalid_object", `${at} must be a list, not ${describeType(value)}`);
  }
  if (value.length > maxItems) {
    fail("invalid_value", `${at} has ${value.length} entries; at most ${maxItems} are allowed`);
  }
  return value;
}

/** Reads an optional list of strings, each checked against `bounds`. */
export function optionalStringList(
  object: JsonObject,
  key: string,
  path: string,
  maxItems: number,
  bounds: StringBounds = {},
): string[] {
  return optionalList(object, key, path, maxItems).map((item, i) => {
    const at = `${path}.${key}[${i}]`;
    if (typeof item !== "string") {
      fail("invalid_object", `${at} must be a string, not ${describeType(item)}`);
    }
    checkLength(item, at, bounds);
    return item;
  });
}

/**
 * Reads an optional string field whose value must be one of `allowed`.
 * Throws `invalid_value` listing the allowed values otherwise.
 */
export function optionalEnum<T extends string>(
  object: JsonObject,
  key: string,
  path: string,
  allowed: readonly T[],
): T | undefined {
  const value = optionalString(object, key, path);
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    fail(
      "invalid_value",
      `${path}.${key} is ${quote(value)}; it must be one of ${allowed.join(", ")}`,
    );
  }
  return value as T;
}

/**
 * Reads `metadata.creationTimestamp` as nanoseconds since the Unix epoch;
 * undefined when it is absent. Throws `invalid_value` when it is not RFC 3339.
 */
export function readCreationNanos(metadata: JsonObject): bigint | undefined {
  const text = optionalString(metadata, "creationTimestamp", "metadata");
  if (text === undefined) return undefined;
  const nanos = parseVersion(text);
  if (nanos === undefined) {
    fail("invalid_value", `metadata.creationTimestamp ${quote(text)} is not an RFC 3339 timestamp`);
  }
  return nanos;
}

/** One targetRef of a policy (GEP-713, with an optional sectionName), as written. */
export interface TargetRef {
  /** Its position in its list (0 for a single `targetRef`), for messages. */
  readonly index: number;
  /** The API group (`""` for a Service). */
  readonly group: string;
  /** The kind (`Service` for the ones the projection carries). */
  readonly kind: string;
  /** The target's name, in the policy's namespace. */
  readonly name: string;
  /** The sectionName (a named Service port), when the targetRef has one. */
  readonly sectionName: string | undefined;
}

/**
 * Reads the targetRef `raw` at `path` (`index` in its list): an object with
 * only group, kind, name and sectionName, group at most 253 characters, kind
 * 1 to 63, name and sectionName 1 to 253. Throws a FieldError
 * (`invalid_object`, `unsupported_field`) otherwise; the kind is the
 * caller's to judge.
 */
export function readTargetRef(raw: unknown, path: string, index: number): TargetRef {
  const ref = asObject(raw, path);
  checkFields(ref, path, { supported: ["group", "kind", "name", "sectionName"] });
  return {
    index,
    group: requiredString(ref, "group", path, { max: 253 }),
    kind: requiredString(ref, "kind", path, { min: 1, max: 63 }),
    name: requiredString(ref, "name", path, { min: 1, max: 253 }),
    sectionName: optionalString(ref, "sectionName", path, { min: 1, max: 253 }),
  };
}

/** A group and kind as written in messages: `Service`, `Gateway.gateway.networking.k8s.io`. */
export function groupKind(group: string, kind: string): string {
  return group === "" ? kind : `${kind}.${group}`;
}
