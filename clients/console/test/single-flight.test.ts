/** One refresh at a time: triggers while one is in flight coalesce into one more. */
import { describe, expect, it } from "vitest";
import { singleFlight } from "../src/views/fleet/single-flight.js";

/** Resolves once the pending promise callbacks ran (one macrotask turn). */
const flushed = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A run whose calls the test settles one by one. */
function controlledRun() {
  const pending: (() => void)[] = [];
  let calls = 0;
  const run = () => {
    calls += 1;
    return new Promise<void>((resolve) => pending.push(resolve));
  };
  const settleNext = async () => {
    pending.shift()?.();
    await flushed();
  };
  return { run, settleNext, calls: () => calls };
}

describe("singleFlight", () => {
  it("runs at once when idle, coalesces triggers during a run into one more", async () => {
    const c = controlledRun();
    const flight = singleFlight(c.run);
    flight.trigger();
    expect([c.calls(), flight.busy()]).toEqual([1, true]);
    flight.trigger();
    flight.trigger();
    expect(c.calls()).toBe(1);
    await c.settleNext();
    expect(c.calls()).toBe(2);
    await c.settleNext();
    expect([c.calls(), flight.busy()]).toEqual([2, false]);
  });

  it("keeps going after a failed run and starts nothing after stop", async () => {
    let calls = 0;
    const flight = singleFlight(() => {
      calls += 1;
      return Promise.reject(new Error("down"));
    });
    flight.trigger();
    await flushed();
    flight.trigger();
    await flushed();
    expect(calls).toBe(2);
    flight.stop();
    flight.trigger();
    expect(calls).toBe(2);
  });
});
