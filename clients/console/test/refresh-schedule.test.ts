/** When the fleet view refreshes: every second, every quarter second while it follows a change. */
import { describe, expect, it } from "vitest";
import { refreshDue } from "../src/views/fleet/refresh-schedule.js";

describe("refreshDue", () => {
  const cases: [string, number, number, number, boolean][] = [
    ["not yet a second since the last", 10_900, 10_000, 0, false],
    ["a second since the last", 11_000, 10_000, 0, true],
    ["following a change: a quarter second since the last", 10_250, 10_000, 12_000, true],
    ["following a change: not yet a quarter second", 10_200, 10_000, 12_000, false],
    ["the change followed long enough: back to every second", 12_300, 12_000, 12_100, false],
    ["never refreshed (last start 0)", 1_796_000_000_000, 0, 0, true],
  ];
  for (const [name, now, last, until, due] of cases) {
    it(name, () => expect(refreshDue(now, last, until)).toBe(due));
  }
});
