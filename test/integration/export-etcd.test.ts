/**
 * The export path end to end over a real etcd: a registrar process with
 * `--export-source dir:PATH` exports the projections of a manifest
 * directory under its own origin, follows edits (writing only what
 * changed), unexports, cleans up after a restart, and stays silent when
 * another cluster is the control cluster.
 */
import { readFile, rm, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseVersion } from "../../services/common/projection-version.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import {
  type ChangeRecorder,
  expectedBytes,
  readRawProjections,
  recordChanges,
  scrapeMetric,
  setCanaryWeights,
  startExportRegistrar,
  versionsOf,
} from "../support/export-store.js";
import { copyExportFixtures, type FixtureDir } from "../support/memory-source.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("x");
const dirs: FixtureDir[] = [];
const recorders: ChangeRecorder[] = [];

afterEach(async () => {
  await Promise.all(recorders.splice(0).map((r) => r.cancel()));
  await stopAllRegistrars();
  await Promise.all(dirs.splice(0).map((d) => d.remove()));
});

async function fixtures(): Promise<string> {
  const dir = await copyExportFixtures();
  dirs.push(dir);
  return dir.path;
}

function exporter(
  prefix: string,
  dir: string,
  cluster = "hub",
  extra: string[] = [],
): Promise<RegistrarProcess> {
  return startExportRegistrar({
    endpoint: shared.etcd.endpoint,
    prefix,
    dir,
    cluster,
    extra: ["--log-level", "debug", ...extra],
  });
}

const SERVICES = ["payments/ledger", "shop/checkout", "web/frontend"];

/** Reads the hub's projections straight from etcd. */
const hubProjections = (prefix: string) => readRawProjections(shared.raw, prefix, "hub");

async function exported(prefix: string, count = SERVICES.length) {
  await waitFor(
    async () => (await hubProjections(prefix)).size === count,
    10_000,
    `${count} projections under hub`,
  );
  return hubProjections(prefix);
}

/** Records every change to projection keys under `prefix` from now on. */
async function projectionChanges(prefix: string) {
  const recorder = await recordChanges(shared.raw, `${prefix}/clusters/`);
  recorders.push(recorder);
  return recorder.changes;
}

/** Counts the reconciles the registrar logged (at debug level). */
function reconciles(registrar: RegistrarProcess): number {
  return registrar.logs.filter((l) => l.msg === "export reconciled").length;
}

async function editFile(path: string, edit: (text: string) => string): Promise<void> {
  await writeFile(path, edit(await readFile(path, "utf8")));
}

describe("export over a real etcd", () => {
  it("exports a manifest directory: one key per exported service under its own origin, with the projector's bytes", async () => {
    const prefix = shared.freshPrefix();
    const dir = await fixtures();
    const registrar = await exporter(prefix, dir);
    const stored = await exported(prefix);
    expect([...stored.keys()].sort()).toEqual(SERVICES);
    const versions = versionsOf(stored);
    const expected = await expectedBytes(dir, "hub", versions);
    for (const service of SERVICES) {
      expect(stored.get(service)?.bytes).toEqual(expected.get(service));
      const version = parseVersion(versions[service] as string);
      expect(version).toBeDefined();
      expect(versions[service]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
    }
    // Nothing was written under any other origin, and the registrar serves what it exported.
    const keys = await shared.raw.getAll().prefix(`${prefix}/clusters/`).keys();
    expect(keys.filter((key) => !key.startsWith(`${prefix}/clusters/hub/`))).toEqual([]);
    expect(keys.filter((key) => key.startsWith(`${prefix}/clusters/hub/config/`))).toHaveLength(3);
    await waitFor(
      async () => (await scrapeMetric(registrar.url, "aether_config_export_services")) === 3,
    );
    expect(await scrapeMetric(registrar.url, "aether_config_export_leader")).toBe(1);
    expect(await scrapeMetric(registrar.url, 'aether_config_export_writes_total{op="put"}')).toBe(
      3,
    );
    const listConfig = async () => {
      const response = await fetch(`${registrar.url}/aether.registry.v1.ConfigService/ListConfig`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      return ((await response.json()) as { projections?: { service: string }[] }).projections ?? [];
    };
    await waitFor(async () => (await listConfig()).length === 3, 5_000, "ListConfig to serve 3");
  });

  it("an edited route changes exactly that service's version, with one write; a touched or reformatted file writes nothing", async () => {
    const prefix = shared.freshPrefix();
    const dir = await fixtures();
    const registrar = await exporter(prefix, dir);
    const before = await exported(prefix);
    await waitFor(() => reconciles(registrar) >= 1);

    // Touch: new mtime, same bytes.
    const changes = await projectionChanges(prefix);
    const future = new Date(Date.now() + 60_000);
    await utimes(join(dir, "payments/ledger-routes.yaml"), future, future);
    // Reformat: same objects, keys in another order and a comment, so the
    // source's snapshot changes and the controller reconciles.
    const seen = reconciles(registrar);
    await editFile(
      join(dir, "payments/ledger-export.yaml"),
      () =>
        "# reformatted\nkind: ServiceExport\napiVersion: multicluster.x-k8s.io/v1alpha1\nmetadata:\n  namespace: payments\n  name: ledger\n",
    );
    await waitFor(() => reconciles(registrar) > seen, 10_000, "a reconcile after the reformat");
    expect(changes).toEqual([]);
    expect(versionsOf(await hubProjections(prefix))).toEqual(versionsOf(before));

    // A real edit: the canary's weights.
    await setCanaryWeights(dir, 80, 20);
    await waitFor(
      async () =>
        (await hubProjections(prefix)).get("shop/checkout")?.modRevision !==
        before.get("shop/checkout")?.modRevision,
      10_000,
      "shop/checkout to be rewritten",
    );
    const after = await hubProjections(prefix);
    // Exactly one write since the touch: the edited service (a write for the
    // touch or the reformat would stand before it).
    await waitFor(() => changes.length >= 1);
    expect(changes).toEqual([{ type: "put", key: projectionKey(prefix, "hub", "shop/checkout") }]);
    for (const service of ["payments/ledger", "web/frontend"]) {
      expect(after.get(service)?.modRevision).toBe(before.get(service)?.modRevision);
      expect(after.get(service)?.projection.version).toBe(before.get(service)?.projection.version);
    }
    const oldVersion = parseVersion(before.get("shop/checkout")?.projection.version as string);
    const newVersion = parseVersion(after.get("shop/checkout")?.projection.version as string);
    expect(newVersion).toBeGreaterThan(oldVersion as bigint);
    const expected = await expectedBytes(dir, "hub", versionsOf(after));
    expect(after.get("shop/checkout")?.bytes).toEqual(expected.get("shop/checkout"));
    expect(
      after.get("shop/checkout")?.projection.routes[0]?.rules[0]?.backends.map((b) => b.weight),
    ).toEqual([80, 20]);
  });

  it("deleting a ServiceExport deletes its projection, and nothing else", async () => {
    const prefix = shared.freshPrefix();
    const dir = await fixtures();
    await exporter(prefix, dir);
    const before = await exported(prefix);
    const changes = await projectionChanges(prefix);
    await rm(join(dir, "payments/ledger-export.yaml"));
    await waitFor(
      async () => !(await hubProjections(prefix)).has("payments/ledger"),
      10_000,
      "payments/ledger to be deleted",
    );
    const after = await hubProjections(prefix);
    expect([...after.keys()].sort()).toEqual(["shop/checkout", "web/frontend"]);
    await waitFor(() => changes.length >= 1);
    expect(changes).toEqual([
      { type: "delete", key: projectionKey(prefix, "hub", "payments/ledger") },
    ]);
    for (const [service, p] of after) {
      expect(p.modRevision).toBe(before.get(service)?.modRevision);
    }
  });

  it("a registrar restarted after an export was removed while it was down deletes the stale key on start", async () => {
    const prefix = shared.freshPrefix();
    const dir = await fixtures();
    const first = await exporter(prefix, dir);
    const before = await exported(prefix);
    expect(await first.stop()).toBe(0);
    await rm(join(dir, "payments/ledger-export.yaml"));

    const second = await exporter(prefix, dir);
    await waitFor(
      async () => !(await hubProjections(prefix)).has("payments/ledger"),
      10_000,
      "the stale payments/ledger key to be deleted",
    );
    await waitFor(() => reconciles(second) >= 1);
    const after = await hubProjections(prefix);
    expect([...after.keys()].sort()).toEqual(["shop/checkout", "web/frontend"]);
    for (const [service, p] of after) {
      expect(p.modRevision).toBe(before.get(service)?.modRevision);
    }
    expect(await scrapeMetric(second.url, 'aether_config_export_writes_total{op="delete"}')).toBe(
      1,
    );
    expect(await scrapeMetric(second.url, 'aether_config_export_writes_total{op="put"}')).toBe(0);
  });

  it("a spoke whose control cluster is the hub writes nothing, and says why", async () => {
    const prefix = shared.freshPrefix();
    const dir = await fixtures();
    const spoke = await exporter(prefix, dir, "spoke", ["--control-cluster", "hub"]);
    const line = await spoke.waitForLog(
      (l) => typeof l.msg === "string" && l.msg.startsWith("control cluster"),
    );
    expect(line.msg).toBe("control cluster is hub; this registrar (spoke) does not export config");
    expect(spoke.logs.filter((l) => l.msg === line.msg)).toHaveLength(1);
    // No config: only its published import status (clusters/spoke/status/...).
    const keys = await shared.raw.getAll().prefix(`${prefix}/`).keys();
    expect(keys.filter((key) => !key.startsWith(`${prefix}/clusters/spoke/status/`))).toEqual([]);
    expect(await scrapeMetric(spoke.url, "aether_config_export_leader")).toBe(0);
    // It still serves, and is ready.
    await waitFor(async () => (await fetch(`${spoke.url}/readyz`)).status === 200);
  });

  it("the hub itself exports when it is the control cluster", async () => {
    const prefix = shared.freshPrefix();
    const dir = await fixtures();
    await exporter(prefix, dir, "hub", ["--control-cluster", "hub"]);
    await exported(prefix);
  });
});
