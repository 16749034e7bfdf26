import { describe, expect, it } from "vitest";
import {
  decideLogLine,
  INITIAL_LOG_RATE_STATE,
  type LogRateState,
} from "../../services/runtime/log-rate-limit.js";

describe("decideLogLine", () => {
  const cases: [string, LogRateState, number, boolean, number, LogRateState][] = [
    [
      "the first line is written",
      INITIAL_LOG_RATE_STATE,
      5,
      true,
      0,
      { lastLoggedAt: 5, suppressed: 0 },
    ],
    [
      "a line within the interval is left out and counted",
      { lastLoggedAt: 0, suppressed: 2 },
      9_999,
      false,
      0,
      { lastLoggedAt: 0, suppressed: 3 },
    ],
    [
      "a line after the interval is written, with the count left out",
      { lastLoggedAt: 0, suppressed: 3 },
      10_000,
      true,
      3,
      { lastLoggedAt: 10_000, suppressed: 0 },
    ],
  ];
  for (const [name, state, now, log, suppressed, next] of cases) {
    it(name, () => expect(decideLogLine(state, now, 10_000)).toEqual({ log, suppressed, next }));
  }
});
