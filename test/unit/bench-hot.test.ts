import { describe, expect, it } from "vitest";
import { parseBenchFlags } from "../../bench/bench-flags.js";
import { histogramTotals, observedBetween } from "../../bench/hot-stats.js";
import { createScenario, planHotChanges } from "../../bench/scenario.js";

describe("the hot-service plan", () => {
  it.each([
    { count: 0, span: 4, hot: [false, false, false, false] },
    { count: 1, span: 4, hot: [false, false, false, true] },
    { count: 2, span: 4, hot: [false, true, false, true] },
    { count: 4, span: 4, hot: [true, true, true, true] },
    { count: 3, span: 5, hot: [false, true, false, true, true] },
  ])("sends $count of $span edits to the hot service, spread evenly", ({ count, span, hot }) => {
    expect(planHotChanges(count, span)).toEqual(hot);
  });

  it("refuses more hot edits than edits", () => {
    expect(() => planHotChanges(5, 4)).toThrow(RangeError);
  });

  it("makes every agent depend on the hot service and sends it exactly N edits of the span", () => {
    const scenario = createScenario({
      ...{ services: 500, agents: 120, deps: 4, changes: 30, seed: 2 },
      ...{ hot: 7, hotSpan: 20 },
    });
    expect(scenario.hot).toBe(scenario.services[0]);
    for (const agent of scenario.agents) {
      expect(agent.deps).toHaveLength(4);
      expect(agent.deps).toContain(scenario.hot);
    }
    const hot = scenario.changes.filter((c) => c.hot);
    expect(hot).toHaveLength(7);
    expect(hot.every((c) => c.index < 20 && c.service === scenario.hot)).toBe(true);
    expect(hot.every((c) => c.interested.length === 120)).toBe(true);
    expect(scenario.changes.filter((c) => !c.hot && c.service === scenario.hot).length).toBe(
      scenario.changes.filter((c) => !c.hot && c.service === scenario.services[0]).length,
    );
  });

  it("has no hot service without --hot, and one dependency is enough for it", () => {
    expect(createScenario({ services: 50, agents: 3, deps: 2, changes: 5, seed: 1 }).hot).toBe(
      undefined,
    );
    const one = createScenario({ services: 50, agents: 3, deps: 1, changes: 5, seed: 1, hot: 5 });
    expect(one.agents.map((a) => a.deps)).toEqual([[one.hot], [one.hot], [one.hot]]);
  });
});

describe("histogram readings", () => {
  const text = [
    "# HELP aether_config_watch_fanout_seconds x",
    'aether_config_watch_fanout_seconds_bucket{le="0.01"} 1',
    "aether_config_watch_fanout_seconds_sum 0.25",
    "aether_config_watch_fanout_seconds_count 3",
    "aether_config_watch_fanout_seconds_other_sum 9",
  ].join("\n");

  it.each([
    { name: "aether_config_watch_fanout_seconds", totals: { sum: 0.25, count: 3 } },
    { name: "aether_config_watch_fanout", totals: undefined },
    { name: "missing", totals: undefined },
  ])("reads the totals of $name", ({ name, totals }) => {
    expect(histogramTotals(text, name)).toEqual(totals);
  });

  it.each([
    { before: { sum: 1, count: 2 }, after: { sum: 1.04, count: 3 }, ms: 40 },
    { before: { sum: 1, count: 2 }, after: { sum: 1.1, count: 4 }, ms: 50 },
    { before: { sum: 1, count: 2 }, after: { sum: 1, count: 2 }, ms: undefined },
    { before: undefined, after: { sum: 1, count: 2 }, ms: undefined },
  ])("observed between $before and $after: $ms ms", ({ before, after, ms }) => {
    const value = observedBetween(before, after);
    if (ms === undefined) expect(value).toBeUndefined();
    else expect(value).toBeCloseTo(ms, 6);
  });
});

describe("bench flags --hot and --etcd-members", () => {
  it("default to no hot service on one etcd member", () => {
    expect(parseBenchFlags([])).toMatchObject({ hot: 0, etcdMembers: 1 });
    expect(parseBenchFlags(["--hot", "20", "--etcd-members", "3"])).toMatchObject({
      hot: 20,
      etcdMembers: 3,
    });
  });

  it.each([
    { argv: ["--hot", "201"], error: /--hot 201 is more than --changes 200/ },
    { argv: ["--hot", "5", "--changes", "4"], error: /--hot 5 is more than --changes 4/ },
    { argv: ["--hot=-1"], error: /--hot must be an integer/ },
    { argv: ["--hot", "2", "--tls"], error: /--hot applies to the default run only/ },
    { argv: ["--hot", "2", "--hostile"], error: /--hot applies to the default run only/ },
    { argv: ["--etcd-members", "2"], error: /--etcd-members must be 1, 3 or 5/ },
    { argv: ["--etcd-members", "0"], error: /--etcd-members must be an integer/ },
    { argv: ["--etcd-members", "3", "--fleet"], error: /--etcd-members applies to the default/ },
  ])("refuses $argv", ({ argv, error }) => {
    expect(() => parseBenchFlags(argv)).toThrow(error);
  });
});
