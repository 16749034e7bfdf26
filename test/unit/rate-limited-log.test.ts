/**
 * The rate-limited log: per kind, the first lines of an interval are written,
 * the rest counted and summed up in one line when the interval ends (by its
 * timer, by a later line, or by `flush`). Fake timers: the clock and the
 * summary timer move together.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createRateLimitedLog } from "../../services/runtime/rate-limited-log.js";
import { captureLogger } from "../support/capture-logger.js";

describe("createRateLimitedLog", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("writes the first lines of a kind per interval and one summary for the rest", () => {
    const captured = captureLogger();
    const log = createRateLimitedLog(captured.logger, { intervalMs: 10_000, perInterval: 3 });
    const written = Array.from({ length: 20_000 }, (_, i) =>
      log.warn("junk-key", { key: `/junk/${i}` }, "skipping a key"),
    );
    expect(written.filter(Boolean)).toHaveLength(3);
    expect(captured.lines).toHaveLength(3);
    expect(log.suppressed("junk-key")).toBe(19_997);

    vi.advanceTimersByTime(10_000);
    expect(captured.lines).toHaveLength(4);
    const summary = captured.lines[3] as Record<string, unknown>;
    expect(summary).toMatchObject({ kind: "junk-key", suppressed: 19_997, level: 40 });
    expect(summary.msg).toBe("19997 more junk-key log lines suppressed in 10 s");

    // A new interval writes its lines again.
    expect(log.warn("junk-key", {}, "skipping a key")).toBe(true);
    expect(captured.lines).toHaveLength(5);
  });

  it("keeps kinds apart", () => {
    const captured = captureLogger();
    const log = createRateLimitedLog(captured.logger, { intervalMs: 10_000, perInterval: 1 });
    expect(log.warn("a", {}, "a1")).toBe(true);
    expect(log.warn("b", {}, "b1")).toBe(true);
    expect(log.warn("a", {}, "a2")).toBe(false);
    expect(log.log("info", "c", {}, "c1")).toBe(true);
    expect(captured.lines.map((line) => line.msg)).toEqual(["a1", "b1", "c1"]);
  });

  it("writes no summary for an interval that held nothing back", () => {
    const captured = captureLogger();
    const log = createRateLimitedLog(captured.logger, { intervalMs: 10_000, perInterval: 2 });
    log.warn("a", {}, "a1");
    vi.advanceTimersByTime(60_000);
    log.flush();
    expect(captured.lines.map((line) => line.msg)).toEqual(["a1"]);
  });

  it("sums up on flush, and a line after the interval ends it", () => {
    const captured = captureLogger();
    const log = createRateLimitedLog(captured.logger, { intervalMs: 10_000, perInterval: 1 });
    log.warn("a", {}, "a1");
    log.warn("a", {}, "a2");
    log.flush();
    expect(captured.lines.map((line) => line.msg)).toEqual([
      "a1",
      "1 more a log lines suppressed in 10 s",
    ]);
    log.flush();
    expect(captured.lines).toHaveLength(2);

    log.warn("b", {}, "b1");
    log.warn("b", {}, "b2");
    vi.setSystemTime(Date.now() + 10_000); // the clock moves, the timer has not fired yet
    log.warn("b", {}, "b3");
    expect(captured.lines.slice(2).map((line) => line.msg)).toEqual([
      "b1",
      "1 more b log lines suppressed in 10 s",
      "b3",
    ]);
    vi.runOnlyPendingTimers();
    expect(captured.lines).toHaveLength(5);
  });
});
