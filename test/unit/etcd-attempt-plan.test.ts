import { describe, expect, it } from "vitest";
import {
  type AttemptState,
  MIN_ATTEMPT_MS,
  planNextAttempt,
} from "../../services/registrar/store/etcd-attempt-plan.js";

const state = (over: Partial<AttemptState>): AttemptState => ({
  endpointCount: 3,
  timeoutMs: 2_000,
  attempts: 0,
  elapsedMs: 0,
  lastFailedHost: true,
  ...over,
});

describe("etcd attempt plan", () => {
  it.each<[string, Partial<AttemptState>, { deadlineMs: number } | undefined]>([
    ["one endpoint: the whole timeout", { endpointCount: 1 }, { deadlineMs: 2_000 }],
    ["one endpoint: no retry", { endpointCount: 1, attempts: 1, elapsedMs: 5 }, undefined],
    ["three endpoints, first: a third", {}, { deadlineMs: 666 }],
    [
      "three endpoints, second after a silent member",
      { attempts: 1, elapsedMs: 666 },
      { deadlineMs: 666 },
    ],
    ["three endpoints, last: what is left", { attempts: 2, elapsedMs: 1_300 }, { deadlineMs: 700 }],
    ["three endpoints, after the last", { attempts: 3, elapsedMs: 1_990 }, undefined],
    ["a share never above what is left", { attempts: 1, elapsedMs: 1_600 }, { deadlineMs: 400 }],
    ["too little left to retry", { attempts: 1, elapsedMs: 1_950 }, undefined],
    [
      "an answer that refuses is final",
      { attempts: 1, elapsedMs: 3, lastFailedHost: false },
      undefined,
    ],
    ["two endpoints: half, then the rest", { endpointCount: 2 }, { deadlineMs: 1_000 }],
    [
      "two endpoints, second: the rest",
      { endpointCount: 2, attempts: 1, elapsedMs: 400 },
      { deadlineMs: 1_600 },
    ],
    ["a write: all the time, first", { write: true }, { deadlineMs: 2_000 }],
    [
      "a write whose attempt may have been sent: never again",
      { write: true, attempts: 1, elapsedMs: 700, lastFailedHost: true, lastUnsent: false },
      undefined,
    ],
    [
      "a write never sent: again, with all that is left",
      { write: true, attempts: 1, elapsedMs: 5, lastUnsent: true },
      { deadlineMs: 1_995 },
    ],
    [
      "a write never sent, every member tried",
      { write: true, attempts: 3, elapsedMs: 15, lastUnsent: true },
      undefined,
    ],
    [
      "five endpoints, short timeout: a floor on the share",
      { endpointCount: 5, timeoutMs: 1_000 },
      { deadlineMs: MIN_ATTEMPT_MS },
    ],
  ])("%s", (_, over, expected) => {
    expect(planNextAttempt(state(over))).toEqual(expected);
  });

  it("the attempts of a request whose members are all silent end within its timeout", () => {
    for (const endpointCount of [1, 2, 3, 5]) {
      let elapsedMs = 0;
      let attempts = 0;
      for (;;) {
        const plan = planNextAttempt(state({ endpointCount, attempts, elapsedMs }));
        if (plan === undefined) break;
        attempts++;
        elapsedMs += plan.deadlineMs;
      }
      expect(attempts).toBe(endpointCount);
      expect(elapsedMs).toBeLessThanOrEqual(2_000);
    }
  });
});
