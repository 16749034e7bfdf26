/** The view shortcuts (`shortcuts.ts`): `g` then a view's key, in time, outside form controls. */
import { describe, expect, it } from "vitest";
import { type KeyPress, SEQUENCE_MS, shortcutStep } from "../src/shortcuts.js";

const press = (key: string, at: number, extra: Partial<KeyPress> = {}): KeyPress => ({
  key,
  at,
  modified: false,
  inField: false,
  ...extra,
});

describe("the console's view shortcuts", () => {
  it.each([
    { name: "g then f goes to the fleet", keys: ["g", "f"], view: "fleet" },
    { name: "g then S (shift) goes to the service view", keys: ["g", "S"], view: "service" },
    { name: "g then e goes to explain", keys: ["g", "e"], view: "explain" },
    { name: "g then l goes to live", keys: ["g", "l"], view: "live" },
    { name: "f alone does nothing", keys: ["f"], view: undefined },
    { name: "g then x then f does nothing", keys: ["g", "x", "f"], view: undefined },
    { name: "g g f still works (the last g counts)", keys: ["g", "g", "f"], view: "fleet" },
  ])("$name", ({ keys, view }) => {
    let pending: number | undefined;
    let went: string | undefined;
    keys.forEach((key, i) => {
      const step = shortcutStep(press(key, i * 100), pending);
      pending = step.pendingG;
      went = step.view;
    });
    expect(went).toBe(view);
  });

  it("needs the second key in time, outside fields, without modifiers", () => {
    expect(shortcutStep(press("f", SEQUENCE_MS + 1), 0).view).toBeUndefined();
    expect(shortcutStep(press("f", SEQUENCE_MS), 0).view).toBe("fleet");
    expect(shortcutStep(press("f", 10, { inField: true }), 0)).toEqual({
      view: undefined,
      pendingG: undefined,
    });
    expect(shortcutStep(press("g", 10, { modified: true }), undefined).pendingG).toBeUndefined();
    expect(shortcutStep(press("f", 10, { modified: true }), 0).view).toBeUndefined();
  });
});
