import { describe, expect, it } from "vitest";
import { formatAge, formatMillis, formatSpan } from "../../clients/aetherctl/time-format.js";

const S = 1_000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

describe("formatSpan", () => {
  it.each([
    [0, "0s"],
    [999, "0s"],
    [45 * S, "45s"],
    [59 * S + 999, "59s"],
    [M, "1m"],
    [3 * M + 12 * S, "3m12s"],
    [10 * M + 30 * S, "10m"],
    [42 * M, "42m"],
    [H, "1h"],
    [3 * H + 5 * M, "3h5m"],
    [8 * H + 5 * M, "8h"],
    [30 * H, "30h"],
    [2 * D, "2d"],
    [3 * D + 4 * H, "3d4h"],
    [12 * D + 4 * H, "12d"],
    [400 * D, "400d"],
    [3 * 365 * D + 45 * D, "3y45d"],
    [2 * 365 * D, "2y"],
    [-5 * S, "-5s"],
    [-(3 * M + 1 * S), "-3m1s"],
  ])("%d ms is %s", (ms, want) => {
    expect(formatSpan(ms)).toBe(want);
  });
});

describe("formatAge", () => {
  const now = Date.parse("2026-11-29T12:05:00Z");
  it.each([
    ["2026-11-29T12:00:00.000000000Z", "5m"],
    ["2026-11-29T12:04:59.999999999Z", "0s"],
    ["2026-11-29T13:00:00+01:00", "5m"],
    ["2026-11-28T12:05:00Z", "24h"],
    ["2026-11-29T12:06:00Z", "-1m"],
    ["yesterday", "-"],
    ["", "-"],
  ])("the age of version %j is %s", (version, want) => {
    expect(formatAge(version, now)).toBe(want);
  });
});

describe("formatMillis", () => {
  it.each([
    [0, "0s"],
    [250, "250ms"],
    [1_000, "1s"],
    [2_500, "2.5s"],
    [10_000, "10s"],
    [90_000, "1m30s"],
    [3_600_000, "1h"],
    [3_661_001, "1h1m1.001s"],
  ])("%d ms is %s", (ms, want) => {
    expect(formatMillis(ms)).toBe(want);
  });
});
