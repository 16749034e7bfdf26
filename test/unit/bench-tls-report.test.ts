import { describe, expect, it } from "vitest";
import { parseBenchFlags } from "../../bench/bench-flags.js";
import type { ConnectionRate } from "../../bench/tls/connection-rate.js";
import type { TlsBenchResults, TlsLeg } from "../../bench/tls/run-tls-bench.js";
import { renderTlsReport, TLS_BEGIN, TLS_END, tlsHeadline } from "../../bench/tls/tls-report.js";

const rate = (concurrency: number, perSecond: number, failures = 0): ConnectionRate => ({
  concurrency,
  connections: perSecond * 10,
  failures,
  seconds: 10,
  perSecond,
  latency: { count: perSecond * 10, p50: 4, p90: 6, p99: 9, max: 12 },
  serverCpuMs: 1000 / perSecond,
  clientCpuMs: 2,
});
const leg = (
  transport: TlsLeg["transport"],
  fleetRssMb: number,
  perStreamKb: number,
  seq: number,
  conc: number,
): TlsLeg => ({
  transport,
  baseRssMb: 100,
  fleetRssMb,
  perStreamKb,
  agentsReadyMs: 5_000,
  sequential: rate(1, seq),
  concurrent: rate(16, conc, transport === "mTLS" ? 2 : 0),
});
const results: TlsBenchResults = {
  startedAt: "2026-12-02T00:00:00.000Z",
  machine: { cpus: 2, node: "v20.20.2", etcd: "3.4.23", loadAverage: 0.5 },
  flags: {
    services: 1_000,
    agents: 1_000,
    deps: 20,
    workers: 4,
    seed: 1,
    handshakeSeconds: 10,
    handshakeConcurrency: 16,
  },
  legs: [leg("h2c", 300, 200, 400, 800), leg("mTLS", 400, 300, 100, 200)],
};

describe("the TLS benchmark's flags and report", () => {
  it("has its own defaults (1000 services), and is a separate run from --hostile", () => {
    expect(parseBenchFlags(["--tls"])).toMatchObject({
      tls: true,
      services: 1_000,
      agents: 1_000,
      handshakeSeconds: 10,
      handshakeConcurrency: 16,
    });
    expect(parseBenchFlags([])).toMatchObject({ tls: false, services: 10_000 });
    expect(() => parseBenchFlags(["--tls", "--hostile"])).toThrow(/separate runs/);
    expect(() => parseBenchFlags(["--tls", "--handshake-concurrency", "0"])).toThrow(
      /--handshake-concurrency/,
    );
  });

  it("tabulates both legs with the mTLS / h2c ratio and states the cost per stream and per connection", () => {
    const report = renderTlsReport(results, `# Report\n\n${TLS_BEGIN}\nold\n${TLS_END}\n\noutro\n`);
    expect(report.startsWith("# Report\n\n")).toBe(true);
    expect(report.endsWith(`${TLS_END}\n\noutro\n`)).toBe(true);
    expect(report).not.toContain("\nold\n");
    expect(report).toContain("on 2 CPUs (load average 0.5 at the start), Node v20.20.2");
    expect(report).toContain("| **RSS per stream (KiB)** | 200 | 300 | 1.50 |");
    expect(report).toContain("| **new connections/s, one at a time** | 400 | 100 | 0.25 |");
    expect(report).toContain("| **new connections/s, 16 at once** | 800 | 200 | 0.25 |");
    expect(report).toContain(
      "| **registrar CPU per new connection, one at a time (ms)** | 2.5 | 10 | 4.00 |",
    );
    expect(report).toContain("the registrar spends 10 ms of CPU on one (h2c 2.5 ms)");
    expect(report).toContain("16 at once 200 (p50 4 / p99 9 ms, 2 failed)");
    expect(report).toContain("TLS costs 100 KiB of registrar RSS per stream (300 vs 200 KiB)");
    const appended = renderTlsReport(results, "# Report\n\nmain results\n");
    expect(appended).toMatch(
      /^# Report\n\nmain results\n\n## What mutual TLS costs\n\n<!-- bench:tls:begin/,
    );
  });

  it("headlines each leg's cost per stream and connection rates", () => {
    expect(tlsHeadline(results)).toEqual({
      h2c_rss_per_stream_kb: 200,
      h2c_connections_per_s_sequential: 400,
      h2c_connections_per_s_concurrent: 800,
      mtls_rss_per_stream_kb: 300,
      mtls_connections_per_s_sequential: 100,
      mtls_connections_per_s_concurrent: 200,
    });
  });
});
