/**
 * Fleet versions: the bounded newest-first history of current versions, and
 * how many versions behind a served one is.
 */
import { describe, expect, it } from "vitest";
import {
  addToHistory,
  type FleetVersion,
  VERSION_HISTORY_LIMIT,
  versionsBehind,
} from "../../services/common/fleet-versions.js";

const v = (minute: number, origin = "hub"): FleetVersion => ({
  origin,
  version: `2026-12-03T10:${String(minute).padStart(2, "0")}:00.000000000Z`,
});

describe("addToHistory", () => {
  it("keeps versions newest first, once each", () => {
    let history: readonly FleetVersion[] = [];
    for (const seen of [v(1), v(3), v(2), v(3)]) history = addToHistory(history, seen);
    expect(history).toEqual([v(3), v(2), v(1)]);
  });

  it("tells apart the same version of two origins", () => {
    expect(addToHistory([v(1, "hub")], v(1, "east"))).toEqual([v(1, "east"), v(1, "hub")]);
  });

  it("returns the same array when the version is already there", () => {
    const history = [v(2), v(1)];
    expect(addToHistory(history, v(1))).toBe(history);
  });

  it("drops the oldest beyond the limit", () => {
    let history: readonly FleetVersion[] = [];
    for (let m = 0; m < 20; m++) history = addToHistory(history, v(m));
    expect(history).toHaveLength(VERSION_HISTORY_LIMIT);
    expect(history[0]).toEqual(v(19));
    expect(history.at(-1)).toEqual(v(4));
  });
});

describe("versionsBehind", () => {
  const history = [v(5), v(4), v(3), v(2)];
  it.each([
    { name: "serves the current version", served: v(5), current: v(5), want: 0 },
    { name: "no current version", served: v(3), current: undefined, want: 0 },
    { name: "one behind", served: v(4), current: v(5), want: 1 },
    { name: "three behind", served: v(2), current: v(5), want: 3 },
    { name: "older than the history", served: v(0), current: v(5), want: 4 },
    {
      name: "between two versions of the history",
      served: { ...v(3), version: "2026-12-03T10:03:30Z" },
      current: v(5),
      want: 2,
    },
    { name: "serves none", served: undefined, current: v(5), want: 4 },
    {
      name: "an unparseable version",
      served: { origin: "hub", version: "x" },
      current: v(5),
      want: 4,
    },
    { name: "a newer version of another origin", served: v(9, "east"), current: v(5), want: 0 },
  ])("$name: $want", ({ served, current, want }) => {
    expect(versionsBehind(served, current, history)).toBe(want);
  });

  it("is capped at the history limit", () => {
    const long = Array.from({ length: 30 }, (_, i) => v(40 - i));
    expect(versionsBehind(v(0), v(40), long)).toBe(VERSION_HISTORY_LIMIT);
  });
});
