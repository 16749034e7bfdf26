import { describe, expect, it } from "vitest";
import { createFanoutTracker } from "../../services/registrar/service/fanout-tracker.js";

describe("fan-out tracker", () => {
  type Step = ["handed" | "written", number, number];
  it.each<{ name: string; steps: Step[]; results: (number | undefined)[] }>([
    {
      name: "reports once the last stream handed the change wrote it, from the first hand-off",
      steps: [
        ["handed", 7, 100],
        ["handed", 7, 101],
        ["handed", 7, 102],
        ["written", 7, 110],
        ["written", 7, 120],
        ["written", 7, 130],
      ],
      results: [undefined, undefined, undefined, undefined, undefined, 30],
    },
    {
      name: "follows revisions apart",
      steps: [
        ["handed", 1, 0],
        ["handed", 2, 5],
        ["written", 2, 6],
        ["written", 1, 9],
      ],
      results: [undefined, undefined, 1, 9],
    },
    {
      name: "ignores writes of a revision it does not follow (done already, or never handed)",
      steps: [
        ["handed", 3, 0],
        ["written", 3, 4],
        ["written", 3, 5],
        ["written", 9, 5],
      ],
      results: [undefined, 4, undefined, undefined],
    },
  ])("$name", ({ steps, results }) => {
    const tracker = createFanoutTracker();
    const got = steps.map(([kind, revision, now]) =>
      kind === "handed" ? tracker.handed(revision, now) : tracker.written(revision, now),
    );
    expect(got).toEqual(results);
    expect(tracker.pending).toBe(0);
  });

  it("forgets the oldest change past its limit (a stream that ended never writes it)", () => {
    const tracker = createFanoutTracker(2);
    tracker.handed(1, 0);
    tracker.handed(2, 0);
    tracker.handed(3, 0);
    expect(tracker.pending).toBe(2);
    expect(tracker.written(1, 5)).toBeUndefined();
    expect(tracker.written(3, 5)).toBe(5);
  });
});
