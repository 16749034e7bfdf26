/** The fleet view's words: short versions of a fixed width, spans, states both ways. */
import { describe, expect, it } from "vitest";
import { FleetState } from "../../../gen/aether/registry/v1/fleet_pb.js";
import {
  CELL_STATES,
  cellState,
  fleetStateOf,
  formatSpan,
  isCellState,
  shortVersion,
} from "../src/views/fleet/fleet-format.js";

describe("shortVersion", () => {
  const cases: [string, string][] = [
    ["2026-12-03T11:59:00.123456789Z", "12-03 11:59:00.123"],
    ["2026-12-03T11:59:00Z", "12-03 11:59:00.000"],
    ["2026-01-09T01:02:03.4Z", "01-09 01:02:03.400"],
    ["", "—"],
    ["v7", "v7"],
    ["not-a-version-but-long-text", "not-a-version-but…"],
  ];
  for (const [version, short] of cases) {
    it(`${JSON.stringify(version)} -> ${short}`, () => expect(shortVersion(version)).toBe(short));
  }
  it("is 18 characters for every canonical version", () => {
    for (const v of ["2026-12-03T11:59:00.000000000Z", "1999-12-31T23:59:59.999999999Z"]) {
      expect(shortVersion(v)).toHaveLength(18);
    }
  });
});

describe("formatSpan", () => {
  const cases: [number, string][] = [
    [-5, "0s"],
    [999, "0s"],
    [42_000, "42s"],
    [182_000, "3m 2s"],
    [7_500_000, "2h 5m"],
    [273_600_000, "3d 4h"],
  ];
  for (const [ms, text] of cases)
    it(`${ms} ms -> ${text}`, () => expect(formatSpan(ms)).toBe(text));
});

describe("cell states", () => {
  it("map to the RPC's states and back, and UNSPECIFIED to none", () => {
    for (const state of CELL_STATES) expect(cellState(fleetStateOf(state))).toBe(state);
    expect(cellState(FleetState.UNSPECIFIED)).toBeUndefined();
    expect(fleetStateOf("drifted")).toBe(FleetState.DRIFTED);
  });
  it("are recognized in a URL only when spelled right", () => {
    expect(["behind", "in-sync", "in_sync", "Behind", ""].map(isCellState)).toEqual([
      ...[true, true, false, false, false],
    ]);
  });
});
