import { describe, expect, it } from "vitest";
import { parseBenchFlags } from "../../bench/bench-flags.js";
import { BEGIN, END, renderReport } from "../../bench/report.js";
import type { BenchResults } from "../../bench/run-bench.js";
import {
  createScenario,
  meshManifests,
  meshObjects,
  routeObject,
  serviceIndex,
} from "../../bench/scenario.js";
import { quantile, summarize } from "../../bench/stats.js";
import { sameContent } from "../../services/common/projection-content.js";
import { projectServices } from "../../services/common/projector.js";

describe("bench scenario", () => {
  const options = { services: 2_000, agents: 300, deps: 7, changes: 50, seed: 3 };

  it("is deterministic for a seed and differs across seeds", () => {
    expect(createScenario(options)).toEqual(createScenario(options));
    expect(createScenario({ ...options, seed: 4 }).agents).not.toEqual(
      createScenario(options).agents,
    );
  });

  it("gives every agent exactly K distinct dependencies, one of them popular", () => {
    const scenario = createScenario(options);
    expect(scenario.popular).toHaveLength(2);
    for (const agent of scenario.agents) {
      expect(new Set(agent.deps).size).toBe(7);
      expect(agent.deps.some((s) => scenario.popular.includes(s))).toBe(true);
    }
  });

  it("lists as interested exactly the agents that depend on the changed service", () => {
    const scenario = createScenario(options);
    for (const change of scenario.changes) {
      const expected = scenario.agents
        .filter((a) => a.deps.includes(change.service))
        .map((a) => a.id);
      expect(change.interested).toEqual(expected);
      expect(change.interested.length).toBeGreaterThan(0);
    }
    expect(scenario.changes.filter((c) => scenario.popular.includes(c.service))).toHaveLength(10);
  });

  it("rejects more dependencies than services", () => {
    expect(() => createScenario({ ...options, services: 5, deps: 6 })).toThrow(RangeError);
  });

  it("projects one exported service per generated service, and an edit changes only its projection", () => {
    const objects = meshObjects(250);
    const before = projectServices(objects);
    expect(before.rejections).toEqual([]);
    expect(before.projections.map((p) => p.service)).toHaveLength(250);
    const position = objects.findIndex(
      (o) => o.kind === "HTTPRoute" && o.metadata?.name === "svc-000042",
    );
    const edited = [...objects];
    edited[position] = routeObject(42, 7);
    const after = projectServices(edited);
    const changed = after.projections.filter(
      (p, i) => !sameContent(p, before.projections[i] as (typeof before.projections)[number]),
    );
    expect(changed.map((p) => p.service)).toEqual(["ns-0000/svc-000042"]);
    expect(serviceIndex("ns-0000/svc-000042")).toBe(42);
  });

  it("writes one manifest file per namespace holding every object", () => {
    const files = meshManifests(250);
    expect([...files.keys()]).toEqual(["ns-0000.yaml", "ns-0001.yaml", "ns-0002.yaml"]);
    const documents = [...files.values()].join("---\n").split(/^---$/m).length;
    expect(documents).toBe(meshObjects(250).length);
  });
});

describe("bench statistics", () => {
  it("takes nearest-rank quantiles", () => {
    const values = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(quantile(values, 0.5)).toBe(50);
    expect(quantile(values, 0.99)).toBe(99);
    expect(quantile([7], 0.99)).toBe(7);
    expect(Number.isNaN(quantile([], 0.5))).toBe(true);
    expect(summarize([1, 2, 3, 4])).toEqual({ count: 4, p50: 2, p90: 4, p99: 4, max: 4 });
  });
});

describe("bench flags and report", () => {
  it("has the issue's defaults and rejects bad numbers", () => {
    const flags = parseBenchFlags([]);
    expect(flags).toMatchObject({
      services: 10_000,
      agents: 1_000,
      deps: 20,
      changes: 200,
      pollChanges: 20,
    });
    expect(parseBenchFlags(["--changes", "5"]).pollChanges).toBe(5);
    expect(() => parseBenchFlags(["--agents", "0"])).toThrow(/--agents/);
    expect(() => parseBenchFlags(["--services", "3", "--deps", "4"])).toThrow(/--deps/);
    expect(() => parseBenchFlags(["--bogus"])).toThrow();
  });

  it("regenerates only the measured section of an existing report", () => {
    const summary = { count: 1, p50: 1, p90: 1, p99: 1, max: 1 };
    const results = {
      startedAt: "2026-11-30T00:00:00Z",
      machine: { cpus: 2, node: "v20", etcd: "3.4" },
      params: {
        ...{ services: 1, agents: 1, deps: 1, changes: 1, pollChanges: 0, workers: 1, seed: 1 },
        ...{ hot: 0, etcdMembers: 1 },
      },
      scenario: { popularServices: 1, fanoutMean: 1, fanoutMax: 1 },
      coldExport: { spawnToAllMs: 1_000, servingToAllMs: 500, hubRssMb: 1, hubPeakRssMb: 1 },
      listAll: { effectivePage1000Ms: 5 },
      fleet: { agentsReadyMs: 1, registrarRssMb: 1, registrarPeakRssMb: 1, workerRssMb: [1] },
      propagation: {
        fromWrite: summary,
        fromEdit: summary,
        perAgentFromWrite: summary,
        popularFromWrite: summary,
        etcdWatch: summary,
        ratioP50: 1,
        ratioP99: 4,
        interestedBytesPerChange: 1,
        interestedBytesPerDelivery: 1,
        uninterestedBytesPerChange: 0,
        uninterestedBytesTotal: 0,
        uninterestedStrays: [],
        deliveries: 1,
      },
      hot: { service: undefined, fromWrite: summary, registrar: summary, agent: summary },
      restart: {
        downMs: 1,
        spawnToAllSyncedMs: 1,
        servingToAllSyncedMs: 1,
        syncedSpreadMs: summary,
        peakCpuPercent: 1,
        peakRssMb: 1,
      },
      agent: { coldSyncMs: 1, processColdStartMs: 1, processRssMb: 1 },
      poll: { intervalMs: 10_000, fromWrite: summary, bytesPerAgentPerInterval: 1 },
    } satisfies BenchResults;
    const previous = `# Report\n\nintro\n\n${BEGIN}\nold numbers\n${END}\n\n## Analysis\nkept\n`;
    const report = renderReport(results, previous);
    expect(report).toContain("intro");
    expect(report).toContain("## Analysis\nkept");
    expect(report).not.toContain("old numbers");
    expect(report).toMatch(/ratio_p99.*\| ≤ 2.5 \| 4 \| \*\*missed\*\*/);
    expect(report).toMatch(/uninterested_bytes_per_change.*\| 0 \| 0 \| met/);
  });
});
