/**
 * Reading a stored projection's top-level protobuf fields off its bytes
 * without decoding the message (to re-stamp a value, or read its version
 * when it is too large to decode).
 */

/** Reads a varint of up to 35 bits at `at`; undefined when it is cut short or longer. */
export function readVarint(
  bytes: Uint8Array,
  at: number,
): { value: number; next: number } | undefined {
  let value = 0;
  for (let shift = 0, i = at; shift < 35; shift += 7, i++) {
    const byte = bytes[i];
    if (byte === undefined) return undefined;
    value += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return { value, next: i + 1 };
  }
  return undefined;
}

/** One top-level field of an encoded message. */
export interface FieldSpan {
  /** The field number. */
  readonly field: number;
  /** The wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32). */
  readonly wireType: number;
  /** Where its tag starts. */
  readonly start: number;
  /** Where its value starts (after the tag and, for length-delimited fields, the length). */
  readonly valueStart: number;
  /** Where it ends (exclusive). */
  readonly end: number;
}

/**
 * The top-level fields of `bytes`, in order, each read once without
 * decoding its value; stops with an `undefined` when the bytes are not a
 * well-formed sequence of fields (a cut varint, an unknown wire type, a
 * length past the end). A consumer may stop early.
 */
export function* fieldSpans(bytes: Uint8Array): Generator<FieldSpan | undefined> {
  let at = 0;
  while (at < bytes.length) {
    const start = at;
    const tag = readVarint(bytes, at);
    if (tag === undefined) return yield undefined;
    at = tag.next;
    let valueStart = at;
    const wireType = tag.value & 7;
    if (wireType === 0) {
      const skipped = readVarint(bytes, at);
      if (skipped === undefined) return yield undefined;
      at = skipped.next;
    } else if (wireType === 1) at += 8;
    else if (wireType === 5) at += 4;
    else if (wireType === 2) {
      const length = readVarint(bytes, at);
      if (length === undefined) return yield undefined;
      valueStart = length.next;
      at = length.next + length.value;
    } else return yield undefined;
    if (at > bytes.length) return yield undefined;
    yield { field: Math.floor(tag.value / 8), wireType, start, valueStart, end: at };
  }
}
