/**
 * The export controller's flags, and its wiring into the registrar on the
 * embedded store (one process: always the leader).
 */
import { afterEach, describe, expect, it } from "vitest";
import { createImportPolicy } from "../../services/common/import-policy.js";
import { createConfigCache } from "../../services/registrar/cache/config-cache.js";
import { createConfiguredExporter } from "../../services/registrar/registrar.js";
import {
  parseRegistrarFlags,
  REGISTRAR_USAGE,
  type RegistrarConfig,
} from "../../services/registrar/registrar-flags.js";
import { createRegistrarMetrics } from "../../services/registrar/registrar-metrics.js";
import { createMemoryStore } from "../../services/registrar/store/memory-store.js";
import { createSilentLogger } from "../../services/runtime/logger.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { copyExportFixtures, type FixtureDir } from "../support/memory-source.js";
import { waitFor } from "../support/wait.js";

function flags(...argv: string[]): RegistrarConfig {
  const parsed = parseRegistrarFlags(["--cluster", "hub", ...argv]);
  if (parsed === "help") throw new Error("unexpected help");
  return parsed;
}

describe("export flags", () => {
  it("default to no export and a 10 s election TTL", () => {
    expect(flags()).toMatchObject({
      exportSource: undefined,
      kubeconfig: undefined,
      electionTtlMs: 10_000,
    });
  });

  it("parse dir:PATH, kubernetes with a kubeconfig, and the election TTL", () => {
    expect(flags("--export-source", "dir:/etc/aether/routes")).toMatchObject({
      exportSource: { kind: "dir", path: "/etc/aether/routes" },
    });
    expect(
      flags("--export-source=kubernetes", "--kubeconfig", "/k/config", "--election-ttl", "3s"),
    ).toMatchObject({
      exportSource: { kind: "kubernetes" },
      kubeconfig: "/k/config",
      electionTtlMs: 3_000,
    });
  });

  const bad: [string[], RegExp][] = [
    [["--export-source", "dir:"], /--export-source "dir:" must be dir:PATH .* or kubernetes/],
    [["--export-source", "/etc/routes"], /must be dir:PATH/],
    [["--export-source", "k8s"], /must be dir:PATH/],
    [
      ["--kubeconfig", "/k"],
      /--kubeconfig is only used with --export-source kubernetes or --local-source kubernetes/,
    ],
    [["--export-source", "dir:/d", "--kubeconfig", "/k"], /--kubeconfig is only used/],
    [["--export-source", "dir:/d", "--seed", "f.json"], /--seed and --export-source/],
    [["--election-ttl", "500ms"], /--election-ttl must be at least 1s/],
    [["--election-ttl", "later"], /--election-ttl: "later" is not a duration/],
  ];
  for (const [argv, message] of bad) {
    it(`rejects ${argv.join(" ")}`, () => expect(() => flags(...argv)).toThrow(message));
  }

  it("are described in --help", () => {
    for (const flag of [
      "--export-source dir:PATH|kubernetes",
      "--kubeconfig PATH",
      "--election-ttl DURATION",
    ]) {
      expect(REGISTRAR_USAGE).toContain(flag);
    }
  });
});

describe("export wiring", () => {
  let running: TestRegistrar | undefined;
  let dir: FixtureDir | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
    await dir?.remove();
    dir = undefined;
  });

  it("creates no exporter without --export-source", () => {
    const store = createMemoryStore({ origin: "hub" });
    const cache = createConfigCache({
      store,
      policy: createImportPolicy({ controlCluster: undefined }),
    });
    const metrics = createRegistrarMetrics({ store, cache, processMetrics: false });
    expect(
      createConfiguredExporter(flags(), store, { logger: createSilentLogger(), metrics }),
    ).toBeUndefined();
  });

  it("exports a directory on the embedded store, always as the leader, and serves the result", async () => {
    dir = await copyExportFixtures();
    running = await startTestRegistrar(["--cluster", "hub", "--export-source", `dir:${dir.path}`]);
    const exporter = running.registrar.exporter;
    expect(exporter?.enabled).toBe(true);
    await waitFor(async () => (await running?.client.listConfig({}))?.projections.length === 3);
    const listed = await running.client.listConfig({});
    expect(listed.projections.map((p) => p.service).sort()).toEqual([
      "payments/ledger",
      "shop/checkout",
      "web/frontend",
    ]);
    expect(listed.projections.every((p) => p.originCluster === "hub")).toBe(true);
    expect(exporter?.status()).toMatchObject({ state: "exporting", services: 3 });
    const metrics = await running.registrar.metrics.registry.metrics();
    expect(metrics).toMatch(/^aether_config_export_leader 1$/m);
    expect(metrics).toMatch(/^aether_config_export_services 3$/m);
    const status = await running.client.getConfigStatus({});
    expect(status.export).toMatchObject({
      enabled: true,
      leader: true,
      services: 3,
      source: `dir:${dir.path}`,
      lastError: "",
    });
    expect(status.export?.lastSuccessTime).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it("reports unparsable files as source problems in GetConfigStatus", async () => {
    dir = await copyExportFixtures();
    const { writeFile } = await import("node:fs/promises");
    await writeFile(`${dir.path}/broken.yaml`, "kind: Service\nmetadata: [unclosed\n");
    running = await startTestRegistrar(["--cluster", "hub", "--export-source", `dir:${dir.path}`]);
    await waitFor(
      async () =>
        ((await running?.client.getConfigStatus({}))?.export?.sourceProblems.length ?? 0) > 0,
    );
    const status = await running.client.getConfigStatus({});
    expect(status.export?.sourceProblems[0]?.where).toMatch(/^broken\.yaml:\d+/);
  });

  it("/readyz does not wait for the export source", async () => {
    running = await startTestRegistrar([
      "--cluster",
      "hub",
      "--export-source",
      "dir:/nonexistent/aether/routes",
    ]);
    expect((await fetch(`${running.url}/readyz`)).status).toBe(200);
    expect(running.registrar.exporter?.status().state).toBe("waiting-for-source");
  });
});
