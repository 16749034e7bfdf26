/**
 * Projection versions: the export time of a projection's content, RFC 3339 in
 * UTC with nanoseconds. Pure, no I/O.
 */

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|([+-])(\d{2}):(\d{2}))$/;

/** The most parsed versions {@link parseVersion} remembers (cleared when full). */
export const PARSED_VERSIONS_REMEMBERED = 4096;

/** The longest text remembered; every valid version is shorter (at most 35 characters). */
const REMEMBERED_LENGTH = 64;

/** The versions parsed lately, and what they parsed to (undefined: invalid). */
const parsed = new Map<string, bigint | undefined>();

/**
 * Parses an RFC 3339 timestamp into nanoseconds since the Unix epoch. Returns
 * undefined when `version` is not a valid RFC 3339 timestamp (so that a
 * malformed version can be rejected, never guessed at). Remembers the last
 * {@link PARSED_VERSIONS_REMEMBERED} versions it parsed: the same few
 * versions are checked, ranked and marked many times (every agent of a
 * process, every check of one change), and a version's instant never changes.
 * Texts longer than any valid version are never remembered (bounded memory).
 */
export function parseVersion(version: string): bigint | undefined {
  const known = parsed.get(version);
  if (known !== undefined || parsed.has(version)) return known;
  const nanos = parseVersionText(version);
  if (version.length > REMEMBERED_LENGTH) return nanos;
  if (parsed.size >= PARSED_VERSIONS_REMEMBERED) parsed.clear();
  parsed.set(version, nanos);
  return nanos;
}

function parseVersionText(version: string): bigint | undefined {
  const m = RFC3339.exec(version);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 60) {
    return undefined;
  }
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day > daysInMonth) return undefined;
  let offsetMinutes = 0;
  if (m[9] !== undefined) {
    const sign = m[9] === "-" ? -1 : 1;
    offsetMinutes = sign * (Number(m[10]) * 60 + Number(m[11]));
  }
  const millis = Date.UTC(year, month - 1, day, hour, minute, second) - offsetMinutes * 60_000;
  const fraction = (m[7] ?? "").padEnd(9, "0");
  return BigInt(millis) * 1_000_000n + BigInt(fraction === "" ? 0 : Number(fraction));
}

/** The latest instant a version can name: `9999-12-31T23:59:59.999999999Z`. */
export const MAX_VERSION_NANOS = 253_402_300_799_999_999_999n;

/**
 * Formats nanoseconds since the Unix epoch as the canonical version string:
 * RFC 3339, UTC, always nine fractional digits, for example
 * `2026-11-29T23:40:42.123456789Z`. Throws a RangeError for an instant before
 * the epoch or after {@link MAX_VERSION_NANOS}, which no valid version names
 * (so a formatted version always parses back to the same instant).
 */
export function formatVersion(epochNanos: bigint): string {
  if (epochNanos < 0n || epochNanos > MAX_VERSION_NANOS) {
    throw new RangeError(`${epochNanos} ns since the epoch is outside the range of versions`);
  }
  const millis = epochNanos / 1_000_000n;
  const nanos = epochNanos % 1_000_000_000n;
  const iso = new Date(Number(millis)).toISOString();
  return `${iso.slice(0, 19)}.${nanos.toString().padStart(9, "0")}Z`;
}

/**
 * Compares two versions by the instant they denote. Both must be valid (see
 * {@link parseVersion}); returns a negative number, 0 or a positive number.
 */
export function compareVersions(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
