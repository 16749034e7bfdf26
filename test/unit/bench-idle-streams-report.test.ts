import { describe, expect, it } from "vitest";
import { parseBenchFlags } from "../../bench/bench-flags.js";
import type { HeapReading } from "../../bench/streams/idle-protocol.js";
import {
  IDLE_BEGIN,
  IDLE_END,
  idleStreamsHeadline,
  perStream,
  renderIdleStreamsReport,
} from "../../bench/streams/idle-streams-report.js";
import {
  type IdleLeg,
  type IdleStreamsResults,
  idlePoints,
} from "../../bench/streams/run-idle-streams.js";

const KIB = 1024;
const MIB = 2 ** 20;
const reading = (heapKib: number, rssMib: number, openStreams = 0): HeapReading => ({
  heapUsed: heapKib * KIB,
  external: heapKib * KIB,
  arrayBuffers: 0,
  rss: rssMib * MIB,
  openStreams,
  collections: 2,
});
/** A leg of 1,000 streams: each connection 5 KiB, each stream `streamKib` more. */
const leg = (path: IdleLeg["path"], streamKib: number, failures = 0): IdleLeg => ({
  path,
  baseline: reading(50_000, 200),
  connections: reading(55_000, 205),
  streams: reading(55_000 + streamKib * 1_000, 230, 1_000),
  closed: reading(50_100, 220),
  streamsOpenMs: 1_500,
  snapshotBytes: 9_000_000,
  failures,
  ...(failures > 0 ? { firstFailure: "stream: refused" } : {}),
});
const results: IdleStreamsResults = {
  startedAt: "2026-12-03T00:00:00.000Z",
  machine: { cpus: 2, node: "v20.20.2", loadAverage: 1.5, loadAverageEnd: 2.25 },
  flags: { streams: 1_000, services: 1_000, deps: 20, seed: 1 },
  points: [
    { services: 1_000, legs: [leg("lane", 7), leg("connect-es", 45)] },
    { services: 10_000, legs: [leg("lane", 8), leg("connect-es", 46, 3)] },
  ],
};

describe("the idle streams benchmark's flags and report", () => {
  it("takes N after --idle-streams, defaults to 1000 services, and is a separate run", () => {
    expect(parseBenchFlags(["--idle-streams", "500"])).toMatchObject({
      idleStreams: 500,
      services: 1_000,
      deps: 20,
    });
    expect(parseBenchFlags([])).toMatchObject({ idleStreams: 0, services: 10_000 });
    expect(() => parseBenchFlags(["--idle-streams", "0"])).toThrow(/--idle-streams must be/);
    expect(() => parseBenchFlags(["--idle-streams"])).toThrow(/argument missing/);
    expect(() => parseBenchFlags(["--idle-streams", "10", "--tls"])).toThrow(/separate runs/);
    expect(() => parseBenchFlags(["--idle-streams", "10", "--hot", "1"])).toThrow(/--hot/);
  });

  it("measures at --services and at the target's 10,000, once at 10,000 or more", () => {
    expect(idlePoints(1_000)).toEqual([1_000, 10_000]);
    expect(idlePoints(10_000)).toEqual([10_000]);
    expect(idlePoints(20_000)).toEqual([20_000]);
  });

  it("derives the costs per stream from the readings", () => {
    expect(perStream(leg("lane", 7), 1_000)).toEqual({
      heapKb: 12,
      heapConnectionKb: 5,
      heapStreamOnlyKb: 7,
      externalKb: 12,
      rssKb: 30.7,
      leftKb: 0.1,
    });
  });

  it("tabulates both paths per point, judges the targets and keeps the rest of the report", () => {
    const report = renderIdleStreamsReport(
      results,
      `# Report\n\n${IDLE_BEGIN}\nold\n${IDLE_END}\n\noutro\n`,
    );
    expect(report.startsWith("# Report\n\n")).toBe(true);
    expect(report.endsWith(`${IDLE_END}\n\noutro\n`)).toBe(true);
    expect(report).not.toContain("\nold\n");
    expect(report).toContain("on 2 CPUs (load average 1.5 at the start, 2.25 at the end)");
    expect(report).toContain("### 1000 services, 1000 streams");
    expect(report).toContain("| **heap per stream, its connection included (KiB)** | 12 | 50 |");
    expect(report).toContain("| heap per stream beyond its connection (KiB) | 7 | 45 |");
    expect(report).toContain("| **registrar RSS with 1000 streams (MiB)** | 230 | 230 |");
    expect(report).toContain("| failed connections or streams | 0 | 3 (stream: refused) |");
    expect(report).toContain(
      "- 1000 services: heap per idle stream against the target of ≤ 15 KiB: lane 12 KiB (met), connect-es 50 KiB (not met).",
    );
    expect(report).toContain(
      "- 10,000 services and 1,000 streams: registrar RSS against the target of ≤ 250 MB: lane 241 MB (met), connect-es 241 MB (met).",
    );
    const appended = renderIdleStreamsReport(results, "# Report\n\nmain results\n");
    expect(appended).toMatch(
      /^# Report\n\nmain results\n\n## Idle streams \(`--idle-streams`\)\n\n<!-- bench:idle-streams:begin/,
    );
  });

  it("headlines each point's heap per stream and RSS by path", () => {
    expect(idleStreamsHeadline(results)).toMatchObject({
      lane_1000_heap_per_stream_kb: 12,
      connect_es_1000_heap_per_stream_kb: 50,
      lane_10000_heap_per_stream_kb: 13,
      connect_es_10000_rss_mb: 230,
    });
  });
});
