/**
 * `npm run bench -- --console`: the console's first view for N services.
 * The sandbox in this process (hub, two spokes, their agents and the
 * console, plaintext and unsigned: the figure is the browser's, not TLS's)
 * over a generated mesh of N services, waited until GetFleetStatus through
 * the console reports every service in every cluster; then one warm-up load
 * and L measured loads of `#/fleet` in headless Chromium
 * (`first-view.ts`), and the size of the console's built assets.
 */
import { readdir, readFile, rm, stat } from "node:fs/promises";
import { cpus } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { DEFAULT_ASSETS_DIR } from "../../clients/aetherctl/dashboard/dashboard-flags.js";
import { ConfigService } from "../../gen/aether/registry/v1/config_service_pb.js";
import { waitFor } from "../../test/support/wait.js";
import type { ConsoleResults } from "./console-report.js";
import { buildConsole, startQuietSandbox, writeGeneratedExamples } from "./console-sandbox.js";
import { type FirstViewLoad, launchChromium, loadFirstView } from "./first-view.js";

/** What the console benchmark is given. */
export interface ConsoleBenchOptions {
  readonly services: number;
  /** Measured loads (after one warm-up). */
  readonly loads: number;
}

/** The most services one GetFleetStatus answers (the contract's limit). */
const FLEET_LIMIT = 1000;

/** Bytes of every file under `dir`, raw and gzipped (each file on its own). */
async function bundleSize(dir: string): Promise<{ raw: number; gzip: number }> {
  let raw = 0;
  let gzip = 0;
  for (const name of await readdir(dir)) {
    const path = join(dir, name);
    if (!(await stat(path)).isFile()) continue;
    const bytes = await readFile(path);
    raw += bytes.length;
    gzip += gzipSync(bytes).length;
  }
  return { raw, gzip };
}

/** The fleet once ready: its clusters and the rows the Fleet view shows. */
interface ReadyFleet {
  readonly clusters: number;
  readonly rows: number;
  /** One more GetFleetStatus through the console once ready, in milliseconds (Node's client, JSON). */
  readonly callMs: number;
}

/**
 * Waits until GetFleetStatus through the console at `url` reports each of
 * the `services` generated services (`ns-…`) in every cluster (the agents'
 * own dependencies, absent from the generated mesh, are rows too).
 */
async function awaitFleet(url: string, services: number): Promise<ReadyFleet> {
  const client = createClient(
    ConfigService,
    createConnectTransport({ baseUrl: url, httpVersion: "1.1", useBinaryFormat: false }),
  );
  let ready = { clusters: 0, rows: 0 };
  await waitFor(
    async () => {
      const fleet = await client.getFleetStatus({ limit: FLEET_LIMIT });
      const clusters = fleet.clusters.length;
      ready = { clusters, rows: Math.min(fleet.matchingServices, FLEET_LIMIT) };
      const complete = fleet.services.filter(
        (service) => service.service.startsWith("ns-") && service.clusters.length === clusters,
      );
      // The response is capped at FLEET_LIMIT rows, the other services among them.
      const others = Math.max(0, fleet.matchingServices - services);
      return fleet.synced && complete.length >= Math.min(services, FLEET_LIMIT - others);
    },
    180_000,
    "every generated service in every cluster of the fleet status",
    250,
  );
  const started = performance.now();
  await client.getFleetStatus({ limit: FLEET_LIMIT });
  return { ...ready, callMs: performance.now() - started };
}

/** Runs the console benchmark; see the module comment. */
export async function runConsoleBench(options: ConsoleBenchOptions): Promise<ConsoleResults> {
  await buildConsole();
  const examples = await writeGeneratedExamples(options.services);
  const sandbox = await startQuietSandbox(["--plaintext", "--unsigned", "--examples", examples]);
  try {
    const url = sandbox.info.console;
    const { clusters, rows, callMs } = await awaitFleet(url, options.services);
    const browser = await launchChromium();
    const loads: FirstViewLoad[] = [];
    let loadavg: string;
    try {
      await loadFirstView(browser, url, rows);
      loadavg = (await readFile("/proc/loadavg", "utf8")).split(" ").slice(0, 3).join(" ");
      for (let i = 0; i < options.loads; i++) loads.push(await loadFirstView(browser, url, rows));
    } finally {
      await browser.close();
    }
    const bundle = await bundleSize(join(DEFAULT_ASSETS_DIR, "assets"));
    return {
      services: options.services,
      clusters,
      fleetCallMs: callMs,
      loads,
      bundleBytes: bundle.raw,
      bundleGzipBytes: bundle.gzip,
      loadavg,
      cpus: cpus().length,
      finishedAt: new Date().toISOString(),
    };
  } finally {
    await sandbox.stop();
    await rm(examples, { recursive: true, force: true });
  }
}
