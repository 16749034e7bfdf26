/** The agent's reconnect schedule: exponential from 200 ms to a 30 s cap, jittered. */
import { describe, expect, it } from "vitest";
import {
  createReconnectBackoff,
  DEFAULT_BACKOFF_INITIAL_MS,
  DEFAULT_BACKOFF_MAX_MS,
} from "../../clients/agent/follower/config-follower.js";

const take = (next: () => number, n: number) => Array.from({ length: n }, () => next());

describe("reconnect backoff", () => {
  it("defaults to 200 ms doubling up to 30 s", () => {
    expect([DEFAULT_BACKOFF_INITIAL_MS, DEFAULT_BACKOFF_MAX_MS]).toEqual([200, 5_000]);
  });

  const schedules: [string, () => number, number[]][] = [
    // The jitter draws from [base/2, base]: the lowest draw halves every base delay...
    ["lowest jitter", () => 0, [100, 200, 400, 800, 1600, 2500, 2500, 2500, 2500, 2500, 2500]],
    // ...and the highest gives (almost) the base delay, capped at 5 s.
    [
      "highest jitter",
      () => 0.999_999,
      [200, 400, 800, 1600, 3200, 5000, 5000, 5000, 5000, 5000, 5000],
    ],
  ];
  for (const [name, random, expected] of schedules) {
    it(`follows the schedule with the ${name}`, () => {
      const backoff = createReconnectBackoff({ random });
      expect(take(() => Math.round(backoff.next()), expected.length)).toEqual(expected);
      expect(backoff.attempts).toBe(expected.length);
    });
  }

  it("stays within [base/2, base] with real randomness, and starts over after a reset", () => {
    const backoff = createReconnectBackoff({ initialMs: 100, maxMs: 800 });
    const bases = [100, 200, 400, 800, 800, 800];
    for (const base of bases) {
      const delay = backoff.next();
      expect(delay).toBeGreaterThanOrEqual(base / 2);
      expect(delay).toBeLessThanOrEqual(base);
    }
    backoff.reset();
    expect(backoff.attempts).toBe(0);
    expect(backoff.next()).toBeLessThanOrEqual(100);
  });

  it("refuses a cap below the first delay", () => {
    expect(() => createReconnectBackoff({ initialMs: 500, maxMs: 100 })).toThrow(RangeError);
  });
});
