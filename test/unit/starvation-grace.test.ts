/**
 * When a missed deadline (a health ping, a watch probe) counts against the
 * store: at once while the process was mostly idle, after at most ten
 * excused misses in a row while it was busy. Table-driven.
 */
import { describe, expect, it } from "vitest";
import {
  DEFAULT_STARVATION_GRACE,
  judgeMissedDeadline,
} from "../../services/registrar/store/starvation-grace.js";

describe("judgeMissedDeadline", () => {
  const cases: [string, number, number, "excuse" | "count"][] = [
    ["an idle process: the store is at fault", 0.02, 0, "count"],
    ["a busy process: excused", 0.97, 0, "excuse"],
    ["busy exactly at the threshold: excused", 0.5, 0, "excuse"],
    ["just under the threshold: counts", 0.49, 0, "count"],
    ["busy, one excused before: excused again", 0.9, 1, "excuse"],
    ["busy, nine excused before: excused again", 0.99, 9, "excuse"],
    ["busy, the grace used up: counts", 0.99, 10, "count"],
    ["idle after excuses: counts", 0.1, 1, "count"],
  ];
  for (const [name, busy, excused, expected] of cases) {
    it(name, () => {
      expect(judgeMissedDeadline({ busy, excused }, DEFAULT_STARVATION_GRACE)).toBe(expected);
    });
  }
  it("follows the rule it is given", () => {
    const strict = { busyThreshold: 0.5, maxGrace: 0 };
    expect(judgeMissedDeadline({ busy: 1, excused: 0 }, strict)).toBe("count");
    expect(
      judgeMissedDeadline(
        { busy: 0.3, excused: 0 },
        { ...strict, maxGrace: 1, busyThreshold: 0.2 },
      ),
    ).toBe("excuse");
  });
});
