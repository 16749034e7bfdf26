/**
 * The shared decisions about loss in an import (mass disappearance) and
 * the flags that set the threshold, table-driven (rollbacks are refused:
 * version-marks.test.ts).
 */
import { describe, expect, it } from "vitest";
import {
  describeThreshold,
  isMassDisappearance,
  MASS_DELETE_GUARD_OFF,
  type MassDeleteThreshold,
} from "../../services/common/import-loss.js";
import { parseMassDeleteFlags } from "../../services/process/mass-delete-flags.js";
import { UsageError } from "../../services/process/usage-error.js";

const half10: MassDeleteThreshold = { fraction: 0.5, minCount: 10 };

describe("isMassDisappearance", () => {
  const cases: [string, number, number, MassDeleteThreshold, boolean][] = [
    ["all of many", 40, 40, half10, true],
    ["more than half, at the minimum", 19, 10, half10, true],
    ["exactly half is not more than half", 20, 10, half10, false],
    ["more than half, below the minimum", 9, 9, half10, false],
    ["1 of 1 (an origin's only projection) is below any minimum above 1", 1, 1, half10, false],
    ["a small share of a large origin", 1000, 400, half10, false],
    ["nothing vanished", 10, 0, half10, false],
    ["a minimum of 0 still needs one", 1, 0, { fraction: 0, minCount: 0 }, false],
    ["0% and min 1: any delete counts", 5, 1, { fraction: 0, minCount: 1 }, true],
    ["the guard off: even all of them", 100, 100, MASS_DELETE_GUARD_OFF, false],
  ];
  for (const [name, held, vanished, threshold, expected] of cases) {
    it(name, () => expect(isMassDisappearance(held, vanished, threshold)).toBe(expected));
  }
});

describe("describeThreshold", () => {
  it("says the share and the minimum, or off", () => {
    expect(describeThreshold(half10)).toBe("more than 50% and at least 10");
    expect(describeThreshold({ fraction: 0.125, minCount: 0 })).toBe(
      "more than 12.5% and at least 1",
    );
    expect(describeThreshold(MASS_DELETE_GUARD_OFF)).toBe("off");
  });
});

describe("parseMassDeleteFlags", () => {
  const good: [string, string, string, MassDeleteThreshold][] = [
    ["the defaults", "50%", "3", { fraction: 0.5, minCount: 3 }],
    ["a fraction of a percent", "12.5%", "3", { fraction: 0.125, minCount: 3 }],
    ["0%", "0%", "1", { fraction: 0, minCount: 1 }],
    ["100% is off", "100%", "1", { fraction: 1, minCount: 1 }],
    ["off", "off", "10", { fraction: 1, minCount: 10 }],
  ];
  for (const [name, threshold, min, expected] of good) {
    it(`accepts ${name}`, () => expect(parseMassDeleteFlags(threshold, min)).toEqual(expected));
  }
  const bad: [string, string, string, RegExp][] = [
    ["a bare number", "50", "10", /--mass-delete-threshold "50" must be a percentage/],
    ["over 100%", "101%", "10", /--mass-delete-threshold "101%"/],
    ["a negative percentage", "-5%", "10", /--mass-delete-threshold/],
    ["a minimum of 0", "50%", "0", /--mass-delete-min "0" must be a whole number, at least 1/],
    ["a fractional minimum", "50%", "2.5", /--mass-delete-min "2.5"/],
    ["a word as minimum", "50%", "ten", /--mass-delete-min "ten"/],
  ];
  for (const [name, threshold, min, message] of bad) {
    it(`refuses ${name}`, () => {
      expect(() => parseMassDeleteFlags(threshold, min)).toThrow(UsageError);
      expect(() => parseMassDeleteFlags(threshold, min)).toThrow(message);
    });
  }
});
