/**
 * Parsing of human durations such as `500ms`, `15s`, `2m` or `1h30m` for
 * command-line flags. Pure, no I/O.
 */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;

/**
 * Parses a duration into milliseconds. Accepts one or more `<number><unit>`
 * parts with units ms, s, m and h (`1m30s`), or `0`. Throws a RangeError that
 * quotes the input when it is not a duration.
 */
export function parseDuration(text: string): number {
  if (text === "0") return 0;
  let total = 0;
  let consumed = 0;
  for (const match of text.matchAll(PART)) {
    if (match.index !== consumed) break;
    total += Number(match[1]) * (UNIT_MS[match[2] as string] as number);
    consumed += match[0].length;
  }
  if (consumed === 0 || consumed !== text.length) {
    throw new RangeError(
      `${JSON.stringify(text)} is not a duration (examples: 500ms, 15s, 2m, 1m30s)`,
    );
  }
  return Math.round(total);
}
