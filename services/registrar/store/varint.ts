/**
 * The protobuf base-128 varint, read off stored bytes without decoding the
 * message they belong to (to re-stamp a value, or read a header field).
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
