/** One run at a time, one queued behind it: bursts coalesce, the last trigger is always followed by a run. */
import { describe, expect, it } from "vitest";
import { coalescedRun } from "../../services/runtime/coalesced-run.js";

/** A task whose runs the test releases one by one. */
function gatedTask() {
  const gates: (() => void)[] = [];
  let runs = 0;
  const task = () =>
    new Promise<void>((resolve) => {
      runs++;
      gates.push(resolve);
    });
  return {
    task,
    get runs() {
      return runs;
    },
    release: async () => {
      gates.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

describe("coalesced run", () => {
  const cases: [string, number, number][] = [
    ["one trigger, one run", 1, 1],
    ["a second trigger while running queues one more run", 2, 2],
    ["a burst while running queues only one more run", 5, 2],
  ];
  for (const [name, triggers, runs] of cases) {
    it(name, async () => {
      const gated = gatedTask();
      const run = coalescedRun(gated.task, () => false);
      const first = run();
      for (let i = 1; i < triggers; i++) void run();
      for (let i = 0; i < runs; i++) await gated.release();
      await first;
      expect(gated.runs).toBe(runs);
    });
  }

  it("neither starts nor re-runs once stopped", async () => {
    let stopped = false;
    const gated = gatedTask();
    const run = coalescedRun(gated.task, () => stopped);
    const first = run();
    void run();
    stopped = true;
    await gated.release();
    await first;
    await run();
    expect(gated.runs).toBe(1);
  });

  it("rejects when the task does, and runs again after", async () => {
    let fail = true;
    const run = coalescedRun(
      async () => {
        if (fail) throw new Error("boom");
      },
      () => false,
    );
    await expect(run()).rejects.toThrow("boom");
    fail = false;
    await expect(run()).resolves.toBeUndefined();
  });
});
