/** The Service view's list: filtering by the words typed, and where the arrow keys move. */
import { describe, expect, it } from "vitest";
import { filterServices, moveHighlight } from "../src/views/service/service-list-model.js";

const items = ["shop/cart", "@mesh", "shop/checkout", "web/front"].map((service) => ({
  service,
  origin: "hub",
  version: "v1",
}));

describe("filterServices", () => {
  it.each([
    ["", ["shop/cart", "shop/checkout", "web/front", "@mesh"]],
    ["shop", ["shop/cart", "shop/checkout"]],
    ["SHOP che", ["shop/checkout"]],
    ["mesh", ["@mesh"]],
    ["nothing", []],
  ])("%j shows %j", (query, want) => {
    expect(filterServices(items, query).map((item) => item.service)).toEqual(want);
  });
});

describe("moveHighlight", () => {
  it.each([
    [0, "ArrowDown", 3, 1],
    [2, "ArrowDown", 3, 2],
    [0, "ArrowUp", 3, 0],
    [2, "Home", 3, 0],
    [0, "End", 3, 2],
    [1, "x", 3, 1],
    [0, "ArrowDown", 0, 0],
  ])("from %i, %s in a list of %i goes to %i", (index, key, count, want) => {
    expect(moveHighlight(index, key, count)).toBe(want);
  });
});
