import { describe, expect, it } from "vitest";
import { keepRowOrder } from "../src/views/fleet/row-order.js";

const rows = (...services: string[]) => services.map((service) => ({ service }));
const names = (list: readonly { service: string }[]) => list.map((r) => r.service);

describe("keepRowOrder", () => {
  it.each([
    ["no previous order: the answer's", undefined, ["b", "a"], ["b", "a"]],
    [
      "the same rows re-sorted by the registrar: the order shown",
      ["a", "b", "c"],
      ["c", "a", "b"],
      ["a", "b", "c"],
    ],
    ["a new service: last, the others in place", ["a", "b"], ["n", "b", "a"], ["a", "b", "n"]],
    [
      "new services keep the answer's order among themselves",
      ["a"],
      ["y", "a", "x"],
      ["a", "y", "x"],
    ],
    ["a service gone: the others close up in order", ["a", "b", "c"], ["c", "a"], ["a", "c"]],
    ["nothing shown before: the answer's", [], ["b", "a"], ["b", "a"]],
  ] as const)("%s", (_, previous, answer, want) => {
    expect(names(keepRowOrder(previous, rows(...answer)))).toEqual(want);
  });

  it("returns the rows themselves, not copies", () => {
    const answer = rows("b", "a");
    const kept = keepRowOrder(["a", "b"], answer);
    expect(kept[0]).toBe(answer[1]);
    expect(keepRowOrder(undefined, answer)).toBe(answer);
  });
});
