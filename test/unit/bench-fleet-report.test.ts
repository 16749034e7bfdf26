import { describe, expect, it } from "vitest";
import { BENCH_USAGE, parseBenchFlags } from "../../bench/bench-flags.js";
import { editMarker, planBurst } from "../../bench/fleet/burst-plan.js";
import type { FleetLeg } from "../../bench/fleet/fleet-leg.js";
import { parseReportCounts, reportsBetween } from "../../bench/fleet/fleet-metrics.js";
import {
  FLEET_BEGIN,
  FLEET_END,
  fleetHeadline,
  renderFleetReport,
} from "../../bench/fleet/fleet-report.js";
import type { FleetBenchResults } from "../../bench/fleet/run-fleet-bench.js";
import { classifyKey, countsBetween } from "../../bench/fleet/write-counter.js";
import { createScenario } from "../../bench/scenario.js";
import { replicaHeaderKey, serviceStatusKey } from "../../services/common/status-layout.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";

const reports = (total: number, agents: number) => ({
  byResult: { accepted: total, unchanged: 0 },
  total,
  reportingAgents: agents,
});
const window = (on: boolean, status: number) => ({
  seconds: 4,
  spokeCpuS: on ? 2 : 1,
  spokeCpuMsPerS: on ? 500 : 250,
  hubCpuS: 1,
  hubCpuMsPerS: 250,
  agentCpuS: 3,
  writes: { config: 40, statusReplica: status, statusService: status * 3, other: 0 },
  configWritesPerS: 10,
  statusWritesPerS: status,
  reports: reports(on ? 1_200 : 0, on ? 1_000 : 0),
  reportsPerS: on ? 300 : 0,
});
const leg = (reporting: boolean, status = 0): FleetLeg => ({
  reporting,
  loadAverage: reporting ? 2.5 : 2,
  agentsReadyMs: 9_000,
  idle: { ...window(reporting, status), seconds: 10, spokeCpuMsPerS: reporting ? 12 : 10 },
  burst: {
    ...window(reporting, status),
    edits: 200,
    editingMs: 30,
    services: 150,
    allAppliedMs: reporting ? 2_100 : 2_000,
    serviceToAllApplied: {
      count: 150,
      p50: 900,
      p90: 1_500,
      p99: reporting ? 1_900 : 1_800,
      max: 2_000,
    },
    tailMs: 2_500,
    settleMs: 2_000,
    lateReports: reporting ? 100 : 0,
    lateMs: 5_000,
  },
});
const results = (status = 0): FleetBenchResults => ({
  startedAt: "2026-12-03T00:00:00.000Z",
  machine: { cpus: 2, node: "v20.20.2", loadAverage: 1.5, loadAverageEnd: 3 },
  flags: { services: 1_000, agents: 1_000, deps: 20, changes: 200, workers: 4, seed: 1 },
  reportInterval: "30s",
  writesCountedBy: "a raw etcd watch",
  legs: [leg(false, status), leg(true, status)],
});

describe("the fleet benchmark's flags, plan and report", () => {
  it("parses --fleet with 1,000 services by default, and is a separate run from the other modes", () => {
    expect(BENCH_USAGE).toContain("--fleet");
    expect(parseBenchFlags(["--fleet"])).toMatchObject({
      fleet: true,
      services: 1_000,
      agents: 1_000,
      changes: 200,
      deps: 20,
    });
    expect(parseBenchFlags(["--fleet", "--services", "300"]).services).toBe(300);
    expect(parseBenchFlags([]).fleet).toBe(false);
    expect(() => parseBenchFlags(["--fleet", "--signing"])).toThrow(
      "--signing and --fleet are separate runs; give one",
    );
  });

  it("plans each edit's file write ahead and each service's final edit and write", () => {
    const scenario = createScenario({ services: 300, agents: 20, deps: 5, changes: 12, seed: 3 });
    const plan = planBurst(300, scenario.changes);
    expect(plan.writes).toHaveLength(12);
    const services = new Set(scenario.changes.map((c) => c.service));
    expect(plan.finals.map((f) => f.service).sort()).toEqual([...services].sort());
    for (const final of plan.finals) {
      const last = scenario.changes.findLastIndex((c) => c.service === final.service);
      expect([final.edit, final.write]).toEqual([last + 1, last]);
      expect(plan.writes[final.write]?.text).toContain(`value: "${final.edit}"`);
    }
  });

  it("reads the edit number after the header's name, and none where there is no header", () => {
    const encoded = (value: string) =>
      Buffer.concat([
        Buffer.from([0x0a, 13]),
        Buffer.from("x-config-edit"),
        Buffer.from([0x12, value.length]),
        Buffer.from(value),
      ]);
    expect(editMarker(encoded("137"))).toBe(137);
    expect(editMarker(Buffer.from("no header here"))).toBeUndefined();
    expect(
      editMarker(
        Buffer.concat([Buffer.from("x-config-edit"), Buffer.from([0x12, 1]), Buffer.from("x")]),
      ),
    ).toBeUndefined();
  });

  it("counts a key as config, a status header, a service's status, or other", () => {
    const prefix = "/aether/v1";
    expect([
      classifyKey(prefix, projectionKey(prefix, "hub", "ns/svc")),
      classifyKey(prefix, replicaHeaderKey(prefix, "spoke", "r1")),
      classifyKey(prefix, serviceStatusKey(prefix, "spoke", "r1", "ns/svc")),
      classifyKey(prefix, `${prefix}/clusters/hub/election/x`),
    ]).toEqual(["config", "statusReplica", "statusService", "other"]);
    const zero = { config: 0, statusReplica: 0, statusService: 0, other: 0 };
    expect(countsBetween(zero, { ...zero, config: 3, other: 1 })).toEqual({
      ...zero,
      config: 3,
      other: 1,
    });
  });

  it("parses the report counters from /metrics text and subtracts two scrapes", () => {
    const text = (accepted: number, agents: number) =>
      [
        "# HELP aether_config_agent_reports_total ...",
        `aether_config_agent_reports_total{result="accepted"} ${accepted}`,
        'aether_config_agent_reports_total{result="unchanged"} 2',
        `aether_config_reporting_agents ${agents}`,
        "aether_config_reporting_agents_other 9",
      ].join("\n");
    const before = parseReportCounts(text(10, 5));
    expect(before).toEqual({
      byResult: { accepted: 10, unchanged: 2 },
      total: 12,
      reportingAgents: 5,
    });
    expect(reportsBetween(before, parseReportCounts(text(25, 7)))).toEqual({
      byResult: { accepted: 15, unchanged: 0 },
      total: 15,
      reportingAgents: 7,
    });
    expect(parseReportCounts("")).toEqual({ byResult: {}, total: 0, reportingAgents: 0 });
  });

  it("tabulates both legs with on − off and says when no status was written", () => {
    const previous = `# Report\n\n${FLEET_BEGIN}\nold\n${FLEET_END}\n\noutro\n`;
    const report = renderFleetReport(results(), previous);
    expect([report.startsWith("# Report\n\n"), report.endsWith(`${FLEET_END}\n\noutro\n`)]).toEqual(
      [true, true],
    );
    expect(report).not.toContain("\nold\n");
    const expected = [
      "(load average 1.5 at the start, off 2, on 2.5 at each leg's start, 3 at the end)",
      "spoke `--agent-report-interval 30s`, both registrars' `--status-interval` and `--status-heartbeat` at their defaults (1 s, 15 s)",
      "| **burst: spoke CPU (ms per s)** | 250 | 500 | 250 |",
      "| **burst: reports received by the spoke** | 0 | 1200 | 1200 |",
      "| burst: agents the spoke tracks at the end | 0 | 1000 | 1000 |",
      "| **burst: per service, last edit → all applied, p99 (ms)** | 1800 | 1900 | 100 |",
      "Reporting added 250 ms of spoke CPU per second during the burst (250 → 500; 1 → 2 s over the window) for 1200 reports",
      "(300 per s; 0.83 ms of spoke CPU per report; 100 more arrived in the 5 s after the window)",
      "no status key was written in either leg",
    ];
    expect(expected.filter((line) => !report.includes(line))).toEqual([]);
    const withStatus = renderFleetReport(results(5), undefined);
    expect(report).toContain("| burst: of which after all applied (ms) | 2500 | 2500 | 0 |");
    expect(withStatus).toContain("| burst: status writes (headers + services) | 20 | 20 | 0 |");
    expect(withStatus).not.toContain("no status key was written");
    expect(withStatus).toMatch(
      /^# Benchmark report\n\n## Fleet reporting\n\n<!-- bench:fleet:begin/,
    );
  });

  it("headlines each leg's burst costs", () => {
    expect(fleetHeadline(results())).toMatchObject({
      off_spoke_cpu_ms_per_s: 250,
      on_spoke_cpu_ms_per_s: 500,
      on_reports: 1_200,
      off_reports: 0,
      on_service_p99_ms: 1_900,
      off_all_applied_ms: 2_000,
    });
  });
});
