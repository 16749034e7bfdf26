/**
 * Which sessions are ended while more streams than `--max-open-streams` are
 * open: none within the bound; those that held the most over the last ticks
 * (the oldest among equals) until the rest fit; never one holding a single
 * stream, nor streams opened since the tick before last.
 */
import { describe, expect, it } from "vitest";
import { sessionsToShed } from "../../services/registrar/server/stream-shedding.js";

/** Sessions s0, s1, … with [open, held] each. */
const sessions = (...loads: [number, number][]) =>
  loads.map(([open, held], i) => ({ session: `s${i}`, open, held }));

describe("sessionsToShed", () => {
  const cases: [string, number, number, ReturnType<typeof sessions>, string[]][] = [
    ["within the bound", 10, 10, sessions([5, 5], [5, 5]), []],
    ["one over: the one that held the most", 11, 10, sessions([1, 1], [8, 8], [2, 2]), ["s1"]],
    [
      "held, not open: a burst of new streams does not count",
      11,
      10,
      sessions([6, 6], [5, 0]),
      ["s0"],
    ],
    ["the oldest among equals", 9, 8, sessions([1, 1], [4, 4], [4, 4]), ["s1"]],
    [
      "as many as it takes, heaviest first",
      30,
      10,
      sessions([8, 8], [12, 10], [10, 9], [1, 1]),
      ["s1", "s2"],
    ],
    ["never a session of one stream", 3, 2, sessions([1, 1], [1, 1], [1, 1]), []],
    ["nobody when only new streams are over", 20, 10, sessions([10, 0], [10, 1]), []],
    ["a session of two is ended", 4, 3, sessions([1, 1], [1, 1], [2, 2]), ["s2"]],
  ];
  it.each(cases)("%s", (_name, total, max, listed, expected) => {
    expect(sessionsToShed(total, max, listed)).toEqual(expected);
  });
});
