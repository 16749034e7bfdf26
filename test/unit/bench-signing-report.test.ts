import { describe, expect, it } from "vitest";
import { BENCH_USAGE, parseBenchFlags } from "../../bench/bench-flags.js";
import type { SigningBenchResults } from "../../bench/signing/run-signing-bench.js";
import { medianFigures } from "../../bench/signing/signing-leg.js";
import {
  renderSigningReport,
  SIGNING_BEGIN,
  SIGNING_END,
  signingHeadline,
} from "../../bench/signing/signing-report.js";

const latency = (p50: number, p99: number) => ({ count: 200, p50, p90: p99 - 10, p99, max: p99 });
const leg = (signed: boolean): SigningBenchResults["legs"][number] => ({
  signed,
  loadAverage: signed ? 2.5 : 2,
  coldExport: { spawnToAllMs: signed ? 10_000 : 8_000, hubCpuS: signed ? 4.5 : 3 },
  stored: { values: 10_000, meanBytes: signed ? 451 : 363, signedValues: signed ? 10_000 : 0 },
  spoke: { spawnToServedMs: signed ? 6_000 : 5_000, cpuS: signed ? 3 : 2, warmListAllMs: 700 },
  rounds: [1, 2, 3].map((i) => ({
    coldExport: { spawnToAllMs: i, hubCpuS: i },
    spoke: { spawnToServedMs: i, cpuS: i, warmListAllMs: i },
  })),
  edits: {
    editToAllApplied: signed ? latency(300, 520) : latency(250, 520),
    agentsReadyMs: 9_000,
    agentCpuS: signed ? 2 : 0.5,
    editSeconds: 50,
    idleAgentCpuMsPerS: signed ? 20 : 4,
    spokeCpuS: 1,
    hubCpuS: 1,
  },
});
const results: SigningBenchResults = {
  startedAt: "2026-12-03T00:00:00.000Z",
  machine: { cpus: 2, node: "v20.20.2", loadAverage: 1.5, loadAverageEnd: 3 },
  flags: { services: 10_000, agents: 1_000, deps: 20, changes: 200, workers: 4, seed: 1 },
  micro: { iterations: 5_000, valueBytes: 363, signUs: 70, verifyUs: 90 },
  legs: [leg(false), leg(true)],
};

describe("the signing benchmark's flags and report", () => {
  it("parses --signing with every flag its help names, and is a separate run from the other modes", () => {
    expect(BENCH_USAGE).toContain("--signing");
    expect(parseBenchFlags(["--signing"])).toMatchObject({
      signing: true,
      services: 10_000,
      agents: 1_000,
      deps: 20,
      changes: 200,
      workers: 4,
      seed: 1,
      cpuProf: false,
      resultsDir: "bench/results",
      report: "bench/REPORT.md",
    });
    expect(
      parseBenchFlags([
        ...["--signing", "--services", "200", "--agents", "20", "--deps", "5"],
        ...["--changes", "10", "--workers", "2", "--seed", "7", "--cpu-prof"],
        ...["--results", "/tmp/r", "--report", ""],
      ]),
    ).toMatchObject({
      signing: true,
      services: 200,
      agents: 20,
      deps: 5,
      changes: 10,
      workers: 2,
      seed: 7,
      cpuProf: true,
      resultsDir: "/tmp/r",
      report: "",
    });
    expect(parseBenchFlags([]).signing).toBe(false);
    expect(() => parseBenchFlags(["--signing", "--tls"])).toThrow(
      "--tls and --signing are separate runs; give one",
    );
    expect(() => parseBenchFlags(["--signing", "--hostile"])).toThrow(/separate runs/);
    expect(() => parseBenchFlags(["--signing", "--services", "0"])).toThrow(/--services/);
    expect(() => parseBenchFlags(["--signing", "--deps", "30", "--services", "20"])).toThrow(
      /--deps 30 is more than --services 20/,
    );
  });

  it("tabulates both legs with the signed / unsigned ratio and the added cost per projection", () => {
    const previous = `# Report\n\n${SIGNING_BEGIN}\nold\n${SIGNING_END}\n\noutro\n`;
    const report = renderSigningReport(results, previous);
    expect([
      report.startsWith("# Report\n\n"),
      report.endsWith(`${SIGNING_END}\n\noutro\n`),
    ]).toEqual([true, true]);
    expect(report).not.toContain("\nold\n");
    const expected = [
      "(load average 1.5 at the start, unsigned 2, signed 2.5 at each leg's start, 3 at the end)",
      "The export and spoke rows are medians of 3 rounds per leg",
      "| cold export: hub spawn → all 10000 in etcd (ms) | 8000 | 10000 | 1.25 |",
      "| **stored bytes per value** | 363 | 451 | 1.24 |",
      "| **agent CPU during the edits, all workers (s)** | 0.5 | 2 | 4.00 |",
      "| agent CPU while idle before them, all workers (ms per s) | 4 | 20 | 5.00 |",
      "| **agent CPU during the edits beyond the idle rate (s)** | 0.3 | 1 | 3.33 |",
      "(0.5 → 2 s; beyond their idle rate 0.3 → 1 s, 3.33×)",
      "| hub: export (sign) | 150 | 70 |",
      "| spoke: import and serve (verify) | 100 | 90 |",
      "a signature adds 88 bytes to each stored value (363 → 451)",
      "Edit → every agent applied: p50 1.20×, p99 1.00×",
    ];
    expect(expected.filter((line) => !report.includes(line))).toEqual([]);
    expect(renderSigningReport(results, "# Report\n\nmain results\n")).toMatch(
      /^# Report\n\nmain results\n\n## Signed projections\n\n<!-- bench:signing:begin/,
    );
  });

  it("takes each export and spoke figure's median over a leg's rounds", () => {
    const round = (ms: number, cpu: number) => ({
      coldExport: { spawnToAllMs: ms, hubCpuS: cpu },
      spoke: { spawnToServedMs: ms * 2, cpuS: cpu * 2, warmListAllMs: 600 + ms },
    });
    expect(medianFigures([round(9_000, 7), round(7_000, 9), round(8_000, 5)])).toEqual({
      coldExport: { spawnToAllMs: 8_000, hubCpuS: 7 },
      spoke: { spawnToServedMs: 16_000, cpuS: 14, warmListAllMs: 8_600 },
    });
  });

  it("headlines the in-process figures and each leg's costs", () => {
    expect(signingHeadline(results)).toMatchObject({
      sign_us_in_process: 70,
      verify_us_in_process: 90,
      unsigned_hub_cpu_us_per_projection: 300,
      signed_hub_cpu_us_per_projection: 450,
      unsigned_stored_bytes_per_value: 363,
      signed_stored_bytes_per_value: 451,
      signed_edit_p50_ms: 300,
      signed_agent_cpu_s: 2,
    });
  });
});
