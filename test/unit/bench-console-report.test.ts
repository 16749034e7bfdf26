/** The console benchmark's flags, headline and report section (pure). */
import { describe, expect, it } from "vitest";
import { BENCH_USAGE, parseBenchFlags } from "../../bench/bench-flags.js";
import {
  type ConsoleResults,
  consoleHeadline,
  renderConsoleReport,
} from "../../bench/console/console-report.js";

const results: ConsoleResults = {
  services: 1_000,
  clusters: 3,
  fleetCallMs: 120.4,
  loads: [
    { ms: 420.4, rows: 1_000 },
    { ms: 380.2, rows: 1_000 },
    { ms: 910.9, rows: 1_000 },
  ],
  bundleBytes: 204_800,
  bundleGzipBytes: 61_440,
  loadavg: "1.20 0.80 0.50",
  cpus: 2,
  finishedAt: "2026-12-03T17:00:00.000Z",
};

describe("the console benchmark", () => {
  it("parses --console with 1,000 services and 5 loads by default, and is a separate run", () => {
    expect(BENCH_USAGE).toContain("--console");
    expect(parseBenchFlags(["--console"])).toMatchObject({
      console: true,
      services: 1_000,
      loads: 5,
    });
    expect(parseBenchFlags(["--console", "--loads", "2", "--services", "10"])).toMatchObject({
      loads: 2,
      services: 10,
    });
    expect(parseBenchFlags([]).console).toBe(false);
    expect(() => parseBenchFlags(["--console", "--fleet"])).toThrow(
      "--fleet and --console are separate runs; give one",
    );
    expect(() => parseBenchFlags(["--console", "--loads", "0"])).toThrow(/--loads/);
  });

  it("headlines the p50 and max of the loads, the fleet's size and the bundle", () => {
    expect(consoleHeadline(results)).toEqual({
      console_first_view_p50_ms: 420,
      console_first_view_max_ms: 911,
      console_loads: 3,
      console_services: 1_000,
      console_clusters: 3,
      console_fleet_call_ms: 120,
      console_bundle_bytes: 204_800,
      console_bundle_gzip_bytes: 61_440,
      loadavg: "1.20 0.80 0.50",
    });
  });

  it("replaces only its own section of the report, keeping the rest", () => {
    const first = renderConsoleReport(results, "# Benchmark report\n\n## Other\n\ntext\n");
    expect(first).toContain("## Other\n\ntext");
    expect(first).toContain("## Console first view");
    expect(first).toContain("| navigation start → fleet ready with every row, p50 | 420 ms |");
    expect(first).toContain("| bundle (dist/assets) | 200.0 KiB (60.0 KiB gzipped) |");
    const second = renderConsoleReport({ ...results, loads: [{ ms: 100, rows: 1_000 }] }, first);
    expect(second.match(/## Console first view/g)).toHaveLength(1);
    expect(second).toContain("| navigation start → fleet ready with every row, p50 | 100 ms |");
    expect(second).toContain("## Other\n\ntext");
  });
});
