import { describe, expect, it } from "vitest";
import { type FailedPing, judgeFailedPing } from "../../services/registrar/cache/ping-verdict.js";

describe("ping verdict", () => {
  it.each<[string, FailedPing, "excuse" | "retry" | "lost"]>([
    [
      "idle, first failure: a leader election may be under way",
      { busy: 0.1, excused: 0, failingForMs: 0 },
      "retry",
    ],
    ["idle, failing for 2.9 s", { busy: 0.1, excused: 0, failingForMs: 2_900 }, "retry"],
    ["idle, failing for 3 s: lost", { busy: 0.1, excused: 0, failingForMs: 3_000 }, "lost"],
    ["busy: the process, not the store", { busy: 0.9, excused: 0, failingForMs: 10_000 }, "excuse"],
    [
      "busy, grace used up, failing long: lost",
      { busy: 0.9, excused: 10, failingForMs: 20_000 },
      "lost",
    ],
    [
      "busy, grace used up, failing briefly: retry",
      { busy: 0.9, excused: 10, failingForMs: 100 },
      "retry",
    ],
  ])("%s", (_, ping, expected) => {
    expect(judgeFailedPing(ping)).toBe(expected);
  });

  it("with lossAfterMs 0 the first failure that is not excused counts", () => {
    expect(judgeFailedPing({ busy: 0, excused: 0, failingForMs: 0 }, 0)).toBe("lost");
  });
});
