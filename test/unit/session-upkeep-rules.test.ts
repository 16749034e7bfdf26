import { describe, expect, it } from "vitest";
import {
  decideSessionAction,
  newSessionClock,
  observeHeaderBlock,
  type SessionAction,
  type SessionClock,
  type SessionUpkeepLimits,
  upkeepTickMs,
} from "../../services/registrar/server/session-upkeep-rules.js";

const LIMITS: SessionUpkeepLimits = {
  headerTimeoutMs: 10_000,
  pingIntervalMs: 30_000,
  pingTimeoutMs: 20_000,
};

describe("observeHeaderBlock", () => {
  const cases: [
    string,
    SessionClock["headerBlock"],
    number,
    number,
    SessionClock["headerBlock"],
  ][] = [
    ["none begun beyond those handed over", undefined, 3, 3, undefined],
    ["a new one begun", undefined, 5, 3, { streamId: 5, since: 100 }],
    [
      "the same one still open keeps its first sighting",
      { streamId: 5, since: 40 },
      5,
      3,
      { streamId: 5, since: 40 },
    ],
    [
      "a later one replaces an earlier",
      { streamId: 5, since: 40 },
      7,
      5,
      { streamId: 7, since: 100 },
    ],
    ["finished once handed over", { streamId: 5, since: 40 }, 5, 5, undefined],
  ];
  for (const [name, previous, lastProc, highest, expected] of cases) {
    it(name, () =>
      expect(
        observeHeaderBlock(previous, { lastProcStreamId: lastProc, highestStreamId: highest }, 100),
      ).toEqual(expected),
    );
  }
});

describe("decideSessionAction", () => {
  const clock = (overrides: Partial<SessionClock>): SessionClock => ({
    ...newSessionClock(0),
    ...overrides,
  });
  const cases: [string, SessionClock, number, SessionUpkeepLimits, SessionAction][] = [
    ["nothing is due", clock({}), 29_999, LIMITS, { type: "none" }],
    ["the PING interval passed", clock({}), 30_000, LIMITS, { type: "ping" }],
    [
      "a PING awaits its answer",
      clock({ pingSentAt: 30_000, lastPingAt: 30_000 }),
      49_999,
      LIMITS,
      { type: "none" },
    ],
    [
      "a PING went unanswered too long",
      clock({ pingSentAt: 30_000, lastPingAt: 30_000 }),
      50_000,
      LIMITS,
      { type: "destroy", reason: "ping_timeout" },
    ],
    ["PINGs are off", clock({}), 1_000_000, { ...LIMITS, pingIntervalMs: 0 }, { type: "none" }],
    [
      "a header block is open, not for long",
      clock({ headerBlock: { streamId: 1, since: 0 } }),
      9_999,
      LIMITS,
      { type: "none" },
    ],
    [
      "a header block stayed open too long, whatever else is due",
      clock({ headerBlock: { streamId: 1, since: 0 }, pingSentAt: 0 }),
      30_000,
      LIMITS,
      { type: "destroy", reason: "header_timeout" },
    ],
  ];
  for (const [name, c, now, limits, action] of cases) {
    it(name, () => expect(decideSessionAction(c, now, limits)).toEqual(action));
  }
});

describe("upkeepTickMs", () => {
  const cases: [SessionUpkeepLimits, number][] = [
    [LIMITS, 1_000],
    [{ headerTimeoutMs: 300, pingIntervalMs: 200, pingTimeoutMs: 300 }, 50],
    [{ headerTimeoutMs: 1_000, pingIntervalMs: 0, pingTimeoutMs: 800 }, 200],
    [{ headerTimeoutMs: 40, pingIntervalMs: 0, pingTimeoutMs: 40 }, 20],
  ];
  for (const [limits, tick] of cases) {
    it(`ticks every ${tick} ms for ${JSON.stringify(limits)}`, () =>
      expect(upkeepTickMs(limits)).toBe(tick));
  }
});
