import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseDocument } from "yaml";
import { parseBenchFlags } from "../../bench/bench-flags.js";
import { deployedNodeOptions } from "../../bench/deployed-node-options.js";
import {
  HOSTILE_BEGIN,
  HOSTILE_END,
  hostileHeadline,
  renderHostileReport,
} from "../../bench/hostile/hostile-report.js";
import {
  type HostilePhase,
  type HostileResults,
  POD_LIMIT_MB,
} from "../../bench/hostile/run-hostile.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");

const latency = (p99: number) => ({ count: 10, p50: 2, p90: 3, p99, max: p99 + 1 });
const probe = (p99: number, failures = 0) => ({
  probes: 100,
  failures,
  latency: latency(p99),
  longestGapMs: p99,
});
function phase(name: string, attacks: HostilePhase["attacks"], p99: number): HostilePhase {
  return {
    name,
    attacks,
    seconds: 20,
    healthAdmin: probe(p99, attacks.length),
    healthApi: probe(p99 * 2, 50),
    good: {
      changes: 20,
      propagation: latency(p99 * 3),
      missed: attacks.length,
      streamReconnects: 0,
      agentsNotWatching: 0,
      listOkPerSecond: 100 - p99,
      listFailed: 0,
      listLatency: latency(5),
    },
    registrarPeakRssMb: 150,
    registrarPeakCpuPercent: 90,
    registrarHwmMb: 160,
    refusals: attacks.length === 0 ? {} : { max_watch_streams: 8000, max_connections: 12 },
    attackers: attacks.map((mode) => ({
      mode,
      connectionsOpened: 200,
      connectionsClosed: 3,
      connectErrors: 1,
      peakOpen: 150,
      requests: 20_000,
      resets: 0,
      outcomes: (mode === "lists" ? { ok: 900, ResourceExhausted: 100 } : {}) as Record<
        string,
        number
      >,
      okLatency: undefined,
    })),
    registrarAlive: true,
  };
}
const results: HostileResults = {
  startedAt: "2026-12-02T00:00:00.000Z",
  machine: { cpus: 2, node: "v20.20.2", etcd: "3.4.23" },
  flags: {
    services: 10_000,
    agents: 20,
    deps: 20,
    phaseSeconds: 20,
    streams: 20_000,
    idleConnections: 20_000,
    concurrentLists: 10_000,
    heapMb: 384,
  },
  podLimitMb: 512,
  phases: [
    phase("baseline", [], 4),
    phase("streams", ["streams"], 30),
    phase("all", ["streams", "idle", "lists"], 60),
  ],
  registrarAlive: true,
  registrarPeakRssMb: 180,
  registrarDeath: undefined,
  registrarWarnings: {},
};

describe("the hostile benchmark's flags and report", () => {
  it("has the issue's sizes and the deployment's heap cap by default, and fewer agents", () => {
    expect(parseBenchFlags(["--hostile"])).toMatchObject({
      hostile: true,
      agents: 20,
      phaseSeconds: 20,
      hostileStreams: 20_000,
      idleConnections: 20_000,
      concurrentLists: 10_000,
      heapMb: 384,
    });
    expect(parseBenchFlags([]).hostile).toBe(false);
    expect(() => parseBenchFlags(["--hostile", "--heap-mb", "32"])).toThrow(/--heap-mb/);
  });

  it("replaces only its own section, and appends one to a report without it", () => {
    const previous = `# Report\n\nintro\n\n${HOSTILE_BEGIN}\nold\n${HOSTILE_END}\n\noutro\n`;
    const updated = renderHostileReport(results, previous);
    expect(updated.startsWith("# Report\n\nintro\n\n")).toBe(true);
    expect(updated.endsWith(`${HOSTILE_END}\n\noutro\n`)).toBe(true);
    expect(updated).not.toContain("\nold\n");
    expect(updated).toContain(
      "| streams | 2 / 30 / 31 (1) | 50 of 100 | 2 / 90 (1) | 0 | 70 (0) | 150 / 90 |",
    );
    expect(updated).toContain("refused max_watch_streams 8000, max_connections 12");
    expect(updated).toContain("list calls answered ok 900, ResourceExhausted 100");
    const appended = renderHostileReport(results, "# Report\n\nmain results\n");
    expect(appended).toMatch(
      /^# Report\n\nmain results\n\n## Hostile clients\n\n<!-- bench:hostile:begin/,
    );
    expect(appended.match(/bench:hostile:begin/g)).toHaveLength(1);
  });

  it("headlines the worst attacked phase, not the baseline", () => {
    expect(hostileHeadline(results)).toEqual({
      registrar_alive: true,
      registrar_peak_rss_mb: 180,
      pod_limit_mb: 512,
      healthz_admin_p99_ms: 60,
      healthz_admin_max_ms: 61,
      healthz_admin_failures: 4,
      agent_streams_reopened: 0,
      changes_missed: 4,
      propagation_p99_ms: 180,
      polite_list_ok_per_s_min: 40,
    });
  });
});

describe("the hostile bench runs the registrar as the deployment does", () => {
  it("judges peaks against the manifest's memory limit and defaults to its heap cap", async () => {
    const path = join(ROOT, "deploy/base/registrar-deployment.yaml");
    const manifest = parseDocument(readFileSync(path, "utf8")).toJS() as {
      spec: {
        template: {
          spec: {
            containers: {
              resources: { limits: { memory: string } };
            }[];
          };
        };
      };
    };
    const [container] = manifest.spec.template.spec.containers;
    const limit = /^(\d+)Mi$/.exec(container?.resources.limits.memory ?? "");
    expect(Number(limit?.[1])).toBe(POD_LIMIT_MB);
    const nodeOptions = await deployedNodeOptions(path, "registrar");
    const heap = /--max-old-space-size=(\d+)/.exec(nodeOptions);
    const flags = parseBenchFlags(["--hostile"]);
    expect(flags.heapMb).toBe(Number(heap?.[1]));
  });
});

describe("deployedNodeOptions", () => {
  it("reads a container's NODE_OPTIONS from a shipped manifest", async () => {
    const options = await deployedNodeOptions(
      join(ROOT, "deploy/components/agent/agent-daemonset.yaml"),
      "agent",
    );
    expect(options).toMatch(/--max-old-space-size=\d+/);
    expect(options).toContain("--max-semi-space-size=1");
  });

  it("pins the registrar's young generation as well as its old space (Node 24 sizes it from the machine)", async () => {
    const options = await deployedNodeOptions(
      join(ROOT, "deploy/base/registrar-deployment.yaml"),
      "registrar",
    );
    expect(options).toMatch(/--max-old-space-size=\d+/);
    expect(options).toMatch(/--max-semi-space-size=\d+/);
  });

  it("fails naming the file when the container has none", async () => {
    const path = join(ROOT, "deploy/components/agent/agent-daemonset.yaml");
    await expect(deployedNodeOptions(path, "no-such-container")).rejects.toThrow(
      `${path}: container no-such-container has no NODE_OPTIONS value`,
    );
  });
});
