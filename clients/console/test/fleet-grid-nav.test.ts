/** The fleet grid's keyboard moves. */
import { describe, expect, it } from "vitest";
import { clampPos, moveInGrid } from "../src/views/fleet/fleet-grid-nav.js";

const size = { rows: 30, cols: 6 };

describe("moveInGrid", () => {
  const cases: [
    string,
    { row: number; col: number },
    string,
    boolean,
    { row: number; col: number } | undefined,
  ][] = [
    ["down", { row: 0, col: 0 }, "ArrowDown", false, { row: 1, col: 0 }],
    ["up at the top stays", { row: 0, col: 2 }, "ArrowUp", false, { row: 0, col: 2 }],
    ["right", { row: 3, col: 2 }, "ArrowRight", false, { row: 3, col: 3 }],
    ["right at the end stays", { row: 3, col: 5 }, "ArrowRight", false, { row: 3, col: 5 }],
    ["left", { row: 3, col: 2 }, "ArrowLeft", false, { row: 3, col: 1 }],
    ["down at the bottom stays", { row: 29, col: 1 }, "ArrowDown", false, { row: 29, col: 1 }],
    ["Home: the row's first", { row: 7, col: 4 }, "Home", false, { row: 7, col: 0 }],
    ["End: the row's last", { row: 7, col: 1 }, "End", false, { row: 7, col: 5 }],
    ["Ctrl+Home: the grid's first", { row: 7, col: 4 }, "Home", true, { row: 0, col: 0 }],
    ["Ctrl+End: the grid's last", { row: 7, col: 1 }, "End", true, { row: 29, col: 5 }],
    ["PageDown: ten rows", { row: 7, col: 1 }, "PageDown", false, { row: 17, col: 1 }],
    ["PageDown near the end", { row: 25, col: 1 }, "PageDown", false, { row: 29, col: 1 }],
    ["PageUp near the top", { row: 4, col: 1 }, "PageUp", false, { row: 0, col: 1 }],
    [
      "a position outside (the grid shrank) is clamped first",
      { row: 50, col: 9 },
      "ArrowUp",
      false,
      { row: 28, col: 5 },
    ],
    ["not a move", { row: 1, col: 1 }, "a", false, undefined],
    ["Enter is not a move", { row: 1, col: 1 }, "Enter", false, undefined],
  ];
  for (const [name, from, key, ctrl, to] of cases) {
    it(name, () => expect(moveInGrid(from, key, size, ctrl)).toEqual(to));
  }

  it("moves nowhere in an empty grid", () => {
    expect(moveInGrid({ row: 0, col: 0 }, "ArrowDown", { rows: 0, cols: 6 })).toBeUndefined();
  });
});

describe("clampPos", () => {
  it("keeps a position inside a grid that changed size", () => {
    expect(clampPos({ row: 9, col: 9 }, { rows: 3, cols: 4 })).toEqual({ row: 2, col: 3 });
    expect(clampPos({ row: 2, col: 1 }, { rows: 0, cols: 0 })).toEqual({ row: 0, col: 0 });
  });
});
