/** The fleet view's model: rows, columns, cells, skew and summaries of a GetFleetStatus answer under the filters. */
import { describe, expect, it } from "vitest";
import { NO_FILTERS } from "../src/views/fleet/fleet-filters.js";
import { fleetModel } from "../src/views/fleet/fleet-model.js";
import { fleetAnswer, V1, V2 } from "./fleet-fixtures.js";

describe("fleetModel", () => {
  it("makes one column per cluster (stale marked), one row per service in the answer's order, one cell per column", () => {
    const model = fleetModel(fleetAnswer(), NO_FILTERS);
    expect(model.columns).toEqual([
      { cluster: "east", stale: false },
      { cluster: "hub", stale: false },
      { cluster: "west", stale: true },
    ]);
    expect(model.rows.map((r) => [r.service, r.state, r.origin, r.short, r.skew])).toEqual([
      ["shop/cart", "rejecting", "hub", "12-03 11:59:00.123", "1v 30s"],
      ["web/frontend", "in-sync", "hub", "12-03 11:59:00.123", "—"],
    ]);
    const [east, hub, west] = model.rows[0]?.cells ?? [];
    expect(east).toMatchObject({
      ...{ cluster: "east", state: "rejecting", short: "12-03 11:58:30.000", version: V1 },
      ...{ agents: "1/2", rejections: ["1 agent reject hub@12-03 11:59:00.123: bad_signature"] },
    });
    expect(east?.title).toContain(`version ${V1} from hub`);
    expect(east?.title).toContain("1 version(s) behind");
    expect(hub).toMatchObject({ state: "in-sync", version: V2, agents: "", rejections: [] });
    expect(west).toMatchObject({ cluster: "west", state: undefined, short: "" });
    expect({ matching: model.matching, received: model.received, synced: model.synced }).toEqual({
      ...{ matching: 2, received: 2, synced: true },
    });
  });

  it("summarizes each cluster: services by state, agents, the last report's age against the answer's time", () => {
    const model = fleetModel(fleetAnswer(), NO_FILTERS);
    expect(model.summaries).toEqual([
      {
        ...{ cluster: "east", stale: false, agents: "1 in sync, 1 behind", lastReport: "4s ago" },
        services: { "in-sync": 1, behind: 1, rejecting: 0, drifted: 0 },
      },
      {
        ...{ cluster: "hub", stale: false, agents: "no agents", lastReport: "1s ago" },
        services: { "in-sync": 2, behind: 0, rejecting: 0, drifted: 0 },
      },
      {
        ...{ cluster: "west", stale: true, agents: "no agents", lastReport: "2m 5s ago" },
        services: { "in-sync": 0, behind: 0, rejecting: 0, drifted: 0 },
      },
    ]);
  });

  const all = ["east", "hub", "west"];
  const both = ["shop/cart", "web/frontend"];
  const cases: [string, Partial<typeof NO_FILTERS>, string[], string[]][] = [
    ["no filter", {}, both, all],
    ["namespace", { ns: "web" }, ["web/frontend"], all],
    ["a namespace prefix is not a namespace", { ns: "sh" }, [], all],
    ["substring, any case", { q: "CAR" }, ["shop/cart"], all],
    ["state", { state: "in-sync" }, ["web/frontend"], all],
    ["cluster", { cluster: "hub" }, both, ["hub"]],
    ["all at once", { ns: "shop", q: "cart", state: "behind" }, [], all],
  ];
  for (const [name, filters, rows, columns] of cases) {
    it(`filters: ${name}`, () => {
      const model = fleetModel(fleetAnswer(), { ...NO_FILTERS, ...filters });
      expect(model.rows.map((r) => r.service)).toEqual(rows);
      expect(model.columns.map((c) => c.cluster)).toEqual(columns);
      for (const row of model.rows) expect(row.cells.map((c) => c.cluster)).toEqual(columns);
    });
  }

  it("says how many the server matched and sent when its limit cut the list", () => {
    const model = fleetModel(fleetAnswer({ matchingServices: 1500 }), NO_FILTERS);
    expect([model.matching, model.received]).toEqual([1500, 2]);
  });
});
