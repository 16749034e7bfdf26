/**
 * Parsing of byte sizes such as `16KiB`, `4MiB` or `65536` for command-line
 * flags. Pure, no I/O.
 */

const UNIT_BYTES: Record<string, number> = {
  "": 1,
  B: 1,
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
};
const SIZE = /^(\d+)(B|KiB|MiB|GiB)?$/;

/**
 * Parses a byte size: a whole number of bytes, or a whole number with a
 * binary unit (B, KiB, MiB, GiB). Throws a RangeError that quotes the input
 * when it is not a size or is beyond `Number.MAX_SAFE_INTEGER` bytes.
 */
export function parseByteSize(text: string): number {
  const match = SIZE.exec(text);
  const bytes =
    match === null ? Number.NaN : Number(match[1]) * (UNIT_BYTES[match[2] ?? ""] as number);
  if (!Number.isSafeInteger(bytes)) {
    throw new RangeError(
      `${JSON.stringify(text)} is not a byte size (examples: 65536, 16KiB, 4MiB, 1GiB)`,
    );
  }
  return bytes;
}
