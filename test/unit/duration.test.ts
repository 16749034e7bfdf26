import { describe, expect, it } from "vitest";
import { parseDuration } from "../../services/common/duration.js";

describe("parseDuration", () => {
  const ok: [string, number][] = [
    ["0", 0],
    ["500ms", 500],
    ["15s", 15_000],
    ["1.5s", 1_500],
    ["2m", 120_000],
    ["1h30m", 5_400_000],
    ["1m30s250ms", 90_250],
  ];
  for (const [text, ms] of ok) it(`parses ${text}`, () => expect(parseDuration(text)).toBe(ms));
  for (const text of ["", "15", "s", "-1s", "1d", "1s ", "abc", "1s-2s"]) {
    it(`rejects ${JSON.stringify(text)}`, () =>
      expect(() => parseDuration(text)).toThrow(/is not a duration/));
  }
});
