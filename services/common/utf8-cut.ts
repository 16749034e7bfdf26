/**
 * Text cut to a number of UTF-8 bytes (a message field with a byte limit,
 * such as `RejectedProjection.message`), never inside a character. Pure.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8");

/**
 * Returns `text` when its UTF-8 encoding has at most `maxBytes` bytes, else
 * its longest prefix of whole characters that does.
 */
export function cutUtf8(text: string, maxBytes: number): string {
  const bytes = encoder.encode(text);
  if (bytes.length <= maxBytes) return text;
  let end = Math.max(0, maxBytes);
  // Back up over continuation bytes (10xxxxxx) to the start of a character.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return decoder.decode(bytes.subarray(0, end));
}
