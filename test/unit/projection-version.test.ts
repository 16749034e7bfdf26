import { describe, expect, it } from "vitest";
import {
  formatVersion,
  MAX_VERSION_NANOS,
  parseVersion,
} from "../../services/common/projection-version.js";

describe("projection versions", () => {
  const valid: [string, bigint][] = [
    ["1970-01-01T00:00:00Z", 0n],
    ["1970-01-01T00:00:00.000000001Z", 1n],
    ["1970-01-01T00:00:01.5Z", 1_500_000_000n],
    ["1970-01-01T01:00:00+01:00", 0n],
    ["2026-11-29T23:40:42.123456789Z", 1_795_995_642_123_456_789n],
  ];
  for (const [text, nanos] of valid) {
    it(`parses ${text}`, () => expect(parseVersion(text)).toBe(nanos));
  }
  const invalid = [
    "",
    "2026-11-29",
    "2026-13-01T00:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-11-29T24:00:00Z",
    "2026-11-29T23:40:42.1234567890Z",
    "2026-11-29T23:40:42",
    " 2026-11-29T23:40:42Z",
  ];
  for (const text of invalid) {
    it(`rejects ${JSON.stringify(text)}`, () => expect(parseVersion(text)).toBeUndefined());
  }
  it("formats with nine fractional digits and round-trips", () => {
    const text = formatVersion(1_795_995_642_000_000_007n);
    expect(text).toBe("2026-11-29T23:40:42.000000007Z");
    expect(parseVersion(text)).toBe(1_795_995_642_000_000_007n);
  });
});

describe("formatVersion's range", () => {
  it("formats the last instant a version can name, and refuses anything outside the range", () => {
    expect(formatVersion(MAX_VERSION_NANOS)).toBe("9999-12-31T23:59:59.999999999Z");
    expect(parseVersion(formatVersion(MAX_VERSION_NANOS))).toBe(MAX_VERSION_NANOS);
    expect(() => formatVersion(MAX_VERSION_NANOS + 1n)).toThrow(RangeError);
    expect(() => formatVersion(-1n)).toThrow(RangeError);
  });
});
