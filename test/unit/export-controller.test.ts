/**
 * The export controller over the embedded store and an in-memory source:
 * what it writes, when it bumps versions, how it coalesces bursts, retries
 * a store that is down, follows leadership and fences, and obeys authority.
 */
import { toBinary } from "@bufbuild/protobuf";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { projectionContent } from "../../services/common/projection-content.js";
import { formatVersion, parseVersion } from "../../services/common/projection-version.js";
import { projectServices } from "../../services/common/projector.js";
import {
  createExportController,
  type ExportController,
  type ExportControllerOptions,
  exportAuthority,
} from "../../services/registrar/export/export-controller.js";
import { createExportMetrics } from "../../services/registrar/export/export-metrics.js";
import { createAlwaysLeader } from "../../services/registrar/export/leader-election.js";
import {
  type ConfigStore,
  MAX_WRITE_BATCH,
  StoreUnavailableError,
} from "../../services/registrar/store/config-store.js";
import {
  createMemoryBackend,
  createMemoryStore,
  type MemoryBackend,
  type MemoryConfigStore,
} from "../../services/registrar/store/memory-store.js";
import { captureLogger } from "../support/capture-logger.js";
import { createManualLeadership } from "../support/manual-leadership.js";
import { createMemoryObjectSource, readManifestObjects } from "../support/memory-source.js";
import { makeProjection } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

const T0 = 1_800_000_000_000_000_000n;
const controllers: ExportController[] = [];

afterEach(async () => {
  await Promise.all(controllers.splice(0).map((c) => c.stop()));
});

/** A clock a test moves by hand. */
function fakeClock(start: bigint = T0) {
  let now = start;
  return {
    now: () => now,
    advance(nanos: bigint) {
      now += nanos;
    },
  };
}

function controller(
  options: Partial<ExportControllerOptions> & Pick<ExportControllerOptions, "source" | "store">,
): ExportController {
  const created = createExportController({
    origin: options.store.origin,
    controlCluster: undefined,
    leadership: createAlwaysLeader(),
    debounceMs: 5,
    retryInitialMs: 5,
    retryMaxMs: 20,
    ...options,
  });
  controllers.push(created);
  return created;
}

async function ownProjections(store: ConfigStore): Promise<Map<string, ServiceConfigProjection>> {
  const listing = await store.list({ origin: store.origin });
  return new Map(listing.entries.map((e) => [e.service, e.projection]));
}

async function versions(store: ConfigStore): Promise<Record<string, string>> {
  const map = await ownProjections(store);
  return Object.fromEntries([...map].map(([service, p]) => [service, p.version]));
}

/** The fixtures with the checkout canary's weights changed. */
function withCanaryWeights(objects: readonly KubeObject[], stable: number, canary: number) {
  return objects.map((object) => {
    if (object.kind !== "HTTPRoute" || object.metadata?.name !== "checkout-canary") return object;
    const copy = structuredClone(object) as {
      spec: { rules: { backendRefs: { weight?: number }[] }[] };
    };
    const refs = copy.spec.rules[0]?.backendRefs ?? [];
    (refs[0] as { weight?: number }).weight = stable;
    (refs[1] as { weight?: number }).weight = canary;
    return copy as KubeObject;
  });
}

/** The fixtures without the ServiceExport of `name`. */
function withoutExport(objects: readonly KubeObject[], name: string) {
  return objects.filter((o) => !(o.kind === "ServiceExport" && o.metadata?.name === name));
}

const bytes = (p: ServiceConfigProjection) => toBinary(ServiceConfigProjectionSchema, p);

/**
 * Starts a controller (always the leader) over the fixtures, or `objects`,
 * and resolves once it has exported all three services and is idle.
 */
async function exportingFixtures(
  options: Partial<ExportControllerOptions> & { objects?: readonly KubeObject[] } = {},
) {
  const objects = options.objects ?? (await readManifestObjects());
  const store = options.store ?? createMemoryStore({ origin: "hub" });
  const source = createMemoryObjectSource(objects);
  const c = controller({ ...options, source, store });
  c.start();
  await waitFor(async () => (await ownProjections(store)).size === 3, 2_000, "three exports");
  await c.idle();
  return { objects, store, source, c };
}

describe("export controller: what it writes", () => {
  it("writes one projection per exported service under its own origin, the projector's bytes with version and origin stamped", async () => {
    const { objects, store, c } = await exportingFixtures({ clock: fakeClock().now });
    const stored = await ownProjections(store);
    const expected = projectServices(objects).projections;
    expect([...stored.keys()].sort()).toEqual(["payments/ledger", "shop/checkout", "web/frontend"]);
    for (const projection of expected) {
      const got = stored.get(projection.service) as ServiceConfigProjection;
      expect(got.originCluster).toBe("hub");
      expect(parseVersion(got.version)).toBeGreaterThanOrEqual(T0);
      expect(bytes(got)).toEqual(
        bytes({ ...projection, version: got.version, originCluster: "hub" }),
      );
    }
    // One clock reading, three services: versions are distinct and increasing in write order.
    const stamps = [...stored.values()].map((p) => parseVersion(p.version) as bigint);
    expect(new Set(stamps).size).toBe(3);
    expect(c.status()).toMatchObject({ state: "exporting", services: 3, writes: 3 });
  });

  it("never exports an un-exported service, even one with routes (shop/cart)", async () => {
    const { store } = await exportingFixtures();
    expect((await ownProjections(store)).has("shop/cart")).toBe(false);
  });

  it("re-exporting identical content writes nothing: the store revision does not move", async () => {
    const { objects, store, source, c } = await exportingFixtures();
    const revision = await store.revision();
    const before = c.status().reconciles;

    source.set(structuredClone(objects)); // same content, new objects
    await waitFor(() => c.status().reconciles > before);
    await c.idle();
    expect(await store.revision()).toBe(revision);
    expect(c.status().writes).toBe(3);
  });

  it("a changed route bumps only its service's version, to the export time", async () => {
    const clock = fakeClock();
    const { objects, store, source, c } = await exportingFixtures({ clock: clock.now });
    const before = await versions(store);
    const revision = await store.revision();

    clock.advance(5_000_000_000n);
    source.set(withCanaryWeights(objects, 80, 20));
    await waitFor(async () => (await store.revision()) > revision);
    await c.idle();
    const after = await versions(store);
    expect(after["payments/ledger"]).toBe(before["payments/ledger"]);
    expect(after["web/frontend"]).toBe(before["web/frontend"]);
    expect(after["shop/checkout"]).toBe(formatVersion(T0 + 5_000_000_000n));
    expect(await store.revision()).toBe(revision + 1);
    const checkout = (await ownProjections(store)).get("shop/checkout");
    expect(checkout?.routes[0]?.rules[0]?.backends.map((b) => b.weight)).toEqual([80, 20]);
  });

  it("keeps versions strictly increasing per service when the clock does not move, and above a stored version from a faster clock", async () => {
    const store = createMemoryStore({ origin: "hub" });
    // A previous leader with a clock one minute ahead exported shop/checkout.
    const ahead = T0 + 60_000_000_000n;
    await store.put({ ...makeProjection("shop/checkout"), version: formatVersion(ahead) });
    // A frozen clock.
    const { objects, source, c } = await exportingFixtures({ store, clock: fakeClock().now });
    const checkoutVersion = async () =>
      parseVersion((await versions(store))["shop/checkout"] as string) as bigint;
    const seen = [await checkoutVersion()];
    expect(seen[0]).toBe(ahead + 1n);

    for (const [stable, canary] of [
      [70, 30],
      [60, 40],
    ] as const) {
      const revision = await store.revision();
      source.set(withCanaryWeights(objects, stable, canary));
      await waitFor(async () => (await store.revision()) > revision);
      await c.idle();
      seen.push(await checkoutVersion());
    }
    // Within one frozen clock reading: each new version is above the last one.
    expect(seen[1]).toBeGreaterThan(seen[0] as bigint);
    expect(seen[2]).toBeGreaterThan(seen[1] as bigint);
    expect((seen[2] as bigint) - (seen[0] as bigint)).toBeLessThan(10n);
  });

  it("never builds on a forged far-future version: the next version is the clock's, and valid", async () => {
    const store = createMemoryStore({ origin: "hub" });
    // Someone with write access put the end of time under the hub's own key.
    await store.put({
      ...makeProjection("shop/checkout", { backend: "rogue/sink" }),
      version: "9999-12-31T23:59:59.999999999Z",
    });
    const { store: written } = await exportingFixtures({ store, clock: fakeClock().now });
    const version = (await versions(written))["shop/checkout"] as string;
    // The forged content differs, so the controller rewrote it, at its own clock.
    expect(parseVersion(version)).toBeGreaterThanOrEqual(T0);
    expect(parseVersion(version)).toBeLessThan(T0 + 1_000n);
    expect(version).toMatch(/^20\d\d-/);
  });

  it("deletes the projection of a service whose ServiceExport is gone", async () => {
    const { objects, store, source, c } = await exportingFixtures();
    const before = await versions(store);
    source.set(withoutExport(objects, "ledger"));
    await waitFor(async () => !(await ownProjections(store)).has("payments/ledger"));
    await c.idle();
    const after = await versions(store);
    expect(after).toEqual({
      "shop/checkout": before["shop/checkout"],
      "web/frontend": before["web/frontend"],
    });
    expect(c.status().services).toBe(2);
  });

  it("holds unexports while the source reports problems, and unexports once it is whole again", async () => {
    const { objects, store, source, c } = await exportingFixtures();
    const before = await versions(store);
    const reconciles = c.status().reconciles;
    source.setProblems([{ where: "payments.yaml:3", message: "YAML error" }]);
    source.set(withoutExport(objects, "ledger"));
    await waitFor(() => c.status().reconciles > reconciles, 5_000, "a reconcile");
    await c.idle();
    expect(await versions(store)).toEqual(before);
    source.setProblems([]);
    source.set(withoutExport(objects, "ledger"));
    await waitFor(async () => !(await ownProjections(store)).has("payments/ledger"));
  });

  it("on start, deletes stale own-origin keys and keeps unchanged ones as they are; other origins are untouched", async () => {
    const objects = await readManifestObjects();
    const backend = createMemoryBackend();
    const first = controller({
      source: createMemoryObjectSource(objects),
      store: createMemoryStore({ origin: "hub", backend }),
    });
    first.start();
    const hub = createMemoryStore({ origin: "hub", backend });
    await waitFor(async () => (await ownProjections(hub)).size === 3);
    await first.stop();
    const spoke = createMemoryStore({ origin: "spoke", backend });
    await spoke.put(makeProjection("payments/ledger"));
    const before = await versions(hub);

    // While it was down, payments/ledger stopped being exported.
    const c = controller({
      source: createMemoryObjectSource(withoutExport(objects, "ledger")),
      store: hub,
    });
    const revision = backend.revision;
    c.start();
    await waitFor(async () => !(await ownProjections(hub)).has("payments/ledger"));
    await c.idle();
    expect(backend.revision).toBe(revision + 1); // the one delete, nothing else
    expect(await versions(hub)).toEqual({
      "shop/checkout": before["shop/checkout"],
      "web/frontend": before["web/frontend"],
    });
    expect((await ownProjections(spoke)).has("payments/ledger")).toBe(true);
  });
});

describe("export controller: coalescing and retries", () => {
  /** A store whose batched `write` waits for `release()` while `gate` is set. */
  function gatedStore(inner: MemoryConfigStore) {
    let gate: Promise<void> | undefined;
    let release = () => {};
    let writes = 0;
    const store: ConfigStore = {
      ...inner,
      write: async (changes, options) => {
        writes++;
        if (gate !== undefined) await gate;
        return inner.write(changes, options);
      },
    };
    return {
      store,
      get writes() {
        return writes;
      },
      hold() {
        gate = new Promise((resolve) => {
          release = () => {
            gate = undefined;
            resolve();
          };
        });
      },
      release: () => release(),
    };
  }

  it("coalesces a burst of changes into one reconcile: one write per service", async () => {
    const { objects, store: inner, source, c } = await exportingFixtures({ debounceMs: 30 });
    const revision = await inner.revision();
    const reconciles = c.status().reconciles;

    for (let weight = 1; weight <= 20; weight++) {
      source.set(withCanaryWeights(objects, 100 - weight, weight));
    }
    await waitFor(async () => (await inner.revision()) > revision);
    await c.idle();
    expect(c.status().reconciles).toBe(reconciles + 1);
    expect(await inner.revision()).toBe(revision + 1);
    const checkout = (await ownProjections(inner)).get("shop/checkout");
    expect(checkout?.routes[0]?.rules[0]?.backends.map((b) => b.weight)).toEqual([80, 20]);
  });

  it("changes arriving during a reconcile cause exactly one more reconcile", async () => {
    const gated = gatedStore(createMemoryStore({ origin: "hub" }));
    const { objects, source, c } = await exportingFixtures({ store: gated.store });
    const reconciles = c.status().reconciles;

    gated.hold();
    const writes = gated.writes;
    source.set(withCanaryWeights(objects, 70, 30));
    await waitFor(() => gated.writes > writes); // the reconcile is stuck writing
    for (let weight = 11; weight <= 15; weight++) {
      source.set(withCanaryWeights(objects, 100 - weight, weight));
    }
    // Let the source's notifications (microtasks) reach the controller while it is stuck.
    await new Promise((resolve) => setImmediate(resolve));
    gated.release();
    await waitFor(() => c.status().reconciles === reconciles + 2);
    await c.idle();
    expect(c.status().reconciles).toBe(reconciles + 2);
    const checkout = (await ownProjections(gated.store)).get("shop/checkout");
    expect(checkout?.routes[0]?.rules[0]?.backends.map((b) => b.weight)).toEqual([85, 15]);
  });

  it("retries with backoff while the store is down, counts the errors, and exports once it is back", async () => {
    const objects = await readManifestObjects();
    const inner = createMemoryStore({ origin: "hub" });
    let failures = 4;
    const store: ConfigStore = {
      ...inner,
      list: async (options) => {
        if (failures > 0) {
          failures--;
          throw new StoreUnavailableError("etcd range failed: connection refused");
        }
        return inner.list(options);
      },
    };
    const registry = new Registry();
    const log = captureLogger();
    const c = controller({
      source: createMemoryObjectSource(objects),
      store,
      metrics: createExportMetrics(registry),
      logger: log.logger,
    });
    c.start();
    await waitFor(async () => (await ownProjections(inner)).size === 3, 3_000);
    await c.idle();
    expect(c.status()).toMatchObject({ state: "exporting", lastError: undefined, reconciles: 5 });
    const text = await registry.metrics();
    expect(text).toMatch(/^aether_config_export_errors_total 4$/m);
    expect(text).toMatch(/^aether_config_export_writes_total\{op="put"\} 3$/m);
    expect(text).toMatch(/^aether_config_export_services 3$/m);
    expect(text).toMatch(/^aether_config_export_leader 1$/m);
    expect(text).toMatch(/^aether_config_export_last_success_timestamp_seconds \d/m);
    // The first failure is logged, not every retry.
    expect(log.withMessage("export reconcile failed; retrying")).toHaveLength(1);
  });
});

describe("export controller: its view of the store", () => {
  /** A store that counts `list` calls and fails the next `write` calls on demand. */
  function countingStore(inner: MemoryConfigStore) {
    let lists = 0;
    let failWrites = 0;
    const store: ConfigStore = {
      ...inner,
      list: async (options) => {
        lists++;
        return inner.list(options);
      },
      write: async (changes, options) => {
        if (failWrites > 0) {
          failWrites--;
          throw new StoreUnavailableError("etcd txn failed: connection reset");
        }
        return inner.write(changes, options);
      },
    };
    return {
      store,
      get lists() {
        return lists;
      },
      failNextWrites(count: number) {
        failWrites = count;
      },
    };
  }

  /** The checkout canary's stored weights. */
  async function canary(store: ConfigStore): Promise<number[] | undefined> {
    const checkout = (await ownProjections(store)).get("shop/checkout");
    return checkout?.routes[0]?.rules[0]?.backends.map((b) => b.weight);
  }

  it("lists the store once per term and diffs later changes against what it wrote; a failed write or a new term lists it again", async () => {
    const objects = await readManifestObjects();
    const inner = createMemoryStore({ origin: "hub" });
    const counting = countingStore(inner);
    const source = createMemoryObjectSource(objects);
    const leadership = createManualLeadership();
    const c = controller({ source, store: counting.store, leadership });
    c.start();
    leadership.elect();
    await waitFor(async () => (await ownProjections(inner)).size === 3);
    await c.idle();
    expect(counting.lists).toBe(1);

    for (const [stable, canaryWeight] of [
      [80, 20],
      [70, 30],
    ] as const) {
      source.set(withCanaryWeights(objects, stable, canaryWeight));
      await waitFor(async () => (await canary(inner))?.join() === `${stable},${canaryWeight}`);
      await c.idle();
    }
    expect(counting.lists).toBe(1);

    // A write fails: it may have landed or not, so the retry lists first.
    counting.failNextWrites(1);
    source.set(withCanaryWeights(objects, 60, 40));
    await waitFor(async () => (await canary(inner))?.join() === "60,40");
    await c.idle();
    expect(counting.lists).toBe(2);
    expect(c.status()).toMatchObject({ state: "exporting", lastError: undefined });

    // Someone else rewrote a key within the term: the watch of its keys sees
    // it, and the controller puts it right without listing the store again.
    const stored = (await ownProjections(inner)).get("shop/checkout") as ServiceConfigProjection;
    await inner.put(makeProjection("shop/checkout", { version: stored.version }));
    await waitFor(async () => (await canary(inner))?.join() === "60,40");
    await c.idle();
    expect(counting.lists).toBe(2);
    const repaired = (await ownProjections(inner)).get("shop/checkout");
    expect(parseVersion(repaired?.version as string)).toBeGreaterThan(
      parseVersion(stored.version) as bigint,
    );

    // Rewritten while it was not the leader: its next term lists again and puts it right.
    leadership.depose();
    await waitFor(() => c.status().state === "standby");
    await inner.put(makeProjection("shop/checkout", { version: repaired?.version as string }));
    leadership.elect();
    await waitFor(async () => (await canary(inner))?.join() === "60,40");
    await c.idle();
    expect(counting.lists).toBe(3);
    const rewritten = (await ownProjections(inner)).get("shop/checkout");
    expect(parseVersion(rewritten?.version as string)).toBeGreaterThan(
      parseVersion(repaired?.version as string) as bigint,
    );
  });

  it("writes a large export in batches of at most MAX_WRITE_BATCH, one revision each", async () => {
    const services = 300;
    const objects: KubeObject[] = [];
    for (let i = 0; i < services; i++) {
      const metadata = { namespace: "bulk", name: `s${i}` };
      objects.push({
        apiVersion: "v1",
        kind: "Service",
        metadata,
        spec: { ports: [{ port: 80 }] },
      });
      objects.push({
        apiVersion: "multicluster.x-k8s.io/v1alpha1",
        kind: "ServiceExport",
        metadata,
      });
    }
    const store = createMemoryStore({ origin: "hub" });
    const start = await store.revision();
    const registry = new Registry();
    const c = controller({
      source: createMemoryObjectSource(objects),
      store,
      metrics: createExportMetrics(registry),
    });
    c.start();
    await waitFor(async () => (await ownProjections(store)).size === services);
    await c.idle();
    const batchCount = Math.ceil(services / MAX_WRITE_BATCH);
    expect(await store.revision()).toBe(start + batchCount);
    const revisions = new Set(
      (await store.list({ origin: "hub" })).entries.map((e) => e.modRevision),
    );
    expect(revisions.size).toBe(batchCount);
    expect(await registry.metrics()).toMatch(
      new RegExp(`^aether_config_export_writes_total\\{op="put"\\} ${services}$`, "m"),
    );
    // Versions are distinct and increasing within a batch, too.
    const versions = new Set(
      (await store.list({ origin: "hub" })).entries.map((e) => e.projection.version),
    );
    expect(versions.size).toBe(services);
  });
});

describe("export controller: leadership and fencing", () => {
  it("writes nothing until elected, and stops writing when deposed", async () => {
    const objects = await readManifestObjects();
    const store = createMemoryStore({ origin: "hub" });
    const source = createMemoryObjectSource(objects);
    const leadership = createManualLeadership();
    const registry = new Registry();
    const c = controller({ source, store, leadership, metrics: createExportMetrics(registry) });
    c.start();
    await source.whenSynced();
    await c.idle();
    expect(c.status().state).toBe("standby");
    expect((await store.list()).entries).toEqual([]);
    expect(await registry.metrics()).toMatch(/^aether_config_export_leader 0$/m);

    leadership.elect();
    await waitFor(async () => (await ownProjections(store)).size === 3);
    expect(await registry.metrics()).toMatch(/^aether_config_export_leader 1$/m);
    leadership.depose();
    await waitFor(() => c.status().state === "standby");
    const revision = await store.revision();
    source.set(withoutExport(objects, "ledger"));
    await new Promise((resolve) => setTimeout(resolve, 30));
    await c.idle();
    expect(await store.revision()).toBe(revision);
    expect(await registry.metrics()).toMatch(/^aether_config_export_leader 0$/m);
  });

  it("a new leader waits for its source's full snapshot: it never deletes live projections while taking over", async () => {
    const objects = await readManifestObjects();
    const backend = createMemoryBackend();
    const store = createMemoryStore({ origin: "hub", backend });
    const old = controller({ source: createMemoryObjectSource(objects), store });
    old.start();
    await waitFor(async () => (await ownProjections(store)).size === 3);
    await old.stop();
    const revision = backend.revision;

    const source = createMemoryObjectSource(objects, { synced: false });
    const leadership = createManualLeadership();
    const c = controller({ source, store, leadership });
    c.start();
    leadership.elect();
    await waitFor(() => c.status().state === "waiting-for-source");
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(backend.revision).toBe(revision);
    source.markSynced();
    await waitFor(() => c.status().reconciles === 1);
    await c.idle();
    expect(backend.revision).toBe(revision); // same content: nothing deleted, nothing rewritten
    expect(c.status().state).toBe("exporting");
  });

  it("a fenced write lands nowhere: the term is relinquished and nothing more is written", async () => {
    const objects = await readManifestObjects();
    const backend: MemoryBackend = createMemoryBackend();
    const store = createMemoryStore({ origin: "hub", backend });
    const electionKey = "/aether/v1/election/hub/export/694d";
    const createRevision = backend.put(electionKey, new TextEncoder().encode("replica-a"));
    const source = createMemoryObjectSource(objects);
    const leadership = createManualLeadership();
    const c = controller({ source, store, leadership });
    c.start();
    const term = leadership.elect({ key: electionKey, createRevision });
    await waitFor(async () => (await ownProjections(store)).size === 3);
    await c.idle();

    // The lease expired behind our back: etcd deleted the key.
    backend.delete(electionKey);
    const revision = backend.revision;
    source.set(withoutExport(objects, "ledger"));
    await waitFor(() => leadership.relinquished.length === 1);
    expect(leadership.relinquished[0]?.term).toBe(term.id);
    expect(leadership.relinquished[0]?.reason).toMatch(/fenced/);
    await c.idle();
    expect(backend.revision).toBe(revision);
    expect((await ownProjections(store)).has("payments/ledger")).toBe(true);
    expect(c.status().state).toBe("standby");
  });

  it("a key recreated by another campaign (same key, new creation revision) fences the old term too", async () => {
    const objects = await readManifestObjects();
    const backend = createMemoryBackend();
    const store = createMemoryStore({ origin: "hub", backend });
    const electionKey = "/aether/v1/election/hub/export/1";
    const createRevision = backend.put(electionKey, new Uint8Array([1]));
    const source = createMemoryObjectSource(objects);
    const leadership = createManualLeadership();
    const c = controller({ source, store, leadership });
    c.start();
    leadership.elect({ key: electionKey, createRevision });
    await waitFor(async () => (await ownProjections(store)).size === 3);
    await c.idle();
    backend.delete(electionKey);
    backend.put(electionKey, new Uint8Array([2]));
    source.set(withoutExport(objects, "ledger"));
    await waitFor(() => leadership.relinquished.length === 1);
    expect((await ownProjections(store)).has("payments/ledger")).toBe(true);
  });
});

describe("export controller: authority, rejections, status", () => {
  it("does not export, nor start its source or election, when another cluster is the control cluster; says why once", async () => {
    expect(exportAuthority("spoke", "hub")).toEqual({
      exports: false,
      reason: "control cluster is hub; this registrar (spoke) does not export config",
    });
    expect(exportAuthority("hub", "hub")).toEqual({ exports: true });
    expect(exportAuthority("hub", undefined)).toEqual({ exports: true });

    const store = createMemoryStore({ origin: "spoke" });
    const source = createMemoryObjectSource(await readManifestObjects());
    const leadership = createManualLeadership();
    const log = captureLogger();
    const c = controller({ source, store, leadership, controlCluster: "hub", logger: log.logger });
    expect(c.enabled).toBe(false);
    c.start();
    c.start();
    leadership.elect();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect((await store.list()).entries).toEqual([]);
    expect(source.calls.start).toBe(0);
    expect(leadership.calls.start).toBe(0);
    expect(
      log.withMessage("control cluster is hub; this registrar (spoke) does not export config"),
    ).toHaveLength(1);
    expect(c.status()).toMatchObject({ state: "disabled" });
  });

  it("exports when it is the control cluster itself", async () => {
    const store = createMemoryStore({ origin: "hub" });
    const c = controller({
      source: createMemoryObjectSource(await readManifestObjects()),
      store,
      controlCluster: "hub",
    });
    c.start();
    await waitFor(async () => (await ownProjections(store)).size === 3);
  });

  it("logs each new route rejection once, counts it by reason, exposes it, and exports the rest of the service", async () => {
    const objects = await readManifestObjects();
    const bad: KubeObject = {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { name: "checkout-regex", namespace: "shop" },
      spec: {
        parentRefs: [{ group: "", kind: "Service", name: "checkout", port: 80 }],
        rules: [
          {
            matches: [{ path: { type: "RegularExpression", value: "/(unclosed" } }],
            backendRefs: [{ name: "checkout", port: 80 }],
          },
        ],
      },
    };
    const store = createMemoryStore({ origin: "hub" });
    const source = createMemoryObjectSource([...objects, bad]);
    const registry = new Registry();
    const log = captureLogger();
    const c = controller({
      source,
      store,
      logger: log.logger,
      metrics: createExportMetrics(registry),
    });
    c.start();
    await waitFor(async () => (await ownProjections(store)).size === 3);
    await c.idle();
    const rejected = log.withMessage("route rejected; it is not exported");
    expect(rejected).toHaveLength(1);
    expect(rejected[0]).toMatchObject({
      route: { kind: "HTTPRoute", namespace: "shop", name: "checkout-regex" },
      reason: "invalid_regex",
      services: ["shop/checkout"],
    });
    expect(c.status().rejections.map((r) => [r.route.name, r.reason])).toEqual([
      ["checkout-regex", "invalid_regex"],
    ]);
    // The service keeps its valid routes.
    const checkout = (await ownProjections(store)).get("shop/checkout");
    expect(checkout?.routes.map((r) => r.name)).toEqual(["checkout-canary", "checkout-from-web"]);

    // Another reconcile with the same rejection logs and counts nothing new.
    const reconciles = c.status().reconciles;
    source.set([...withCanaryWeights(objects, 50, 50), bad]);
    await waitFor(() => c.status().reconciles > reconciles);
    await c.idle();
    expect(log.withMessage("route rejected; it is not exported")).toHaveLength(1);
    expect(await registry.metrics()).toMatch(
      /^aether_config_export_rejections_total\{reason="invalid_regex"\} 1$/m,
    );

    // Fixed, then broken again: a new rejection, logged and counted again.
    source.set(objects);
    await waitFor(() => c.status().rejections.length === 0);
    source.set([...objects, bad]);
    await waitFor(() => c.status().rejections.length === 1);
    expect(log.withMessage("route rejected; it is not exported")).toHaveLength(2);
  });

  it("exports a BackendTLSPolicy with its CA, follows a CA edit to one service, and rejects it once the ConfigMap is gone", async () => {
    const clock = fakeClock();
    const pem = (text: string) =>
      `-----BEGIN CERTIFICATE-----\n${text}\n-----END CERTIFICATE-----\n`;
    const ca = (text: string) =>
      ({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { namespace: "payments", name: "ledger-ca" },
        data: { "ca.crt": pem(text) },
      }) as KubeObject;
    const policy: KubeObject = {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "BackendTLSPolicy",
      metadata: { namespace: "payments", name: "ledger-tls" },
      spec: {
        targetRefs: [{ group: "", kind: "Service", name: "ledger" }],
        validation: {
          caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "ledger-ca" }],
          hostname: "ledger.payments.example",
        },
      },
    };
    const fixtures = await readManifestObjects();
    const { store, source, c } = await exportingFixtures({
      clock: clock.now,
      objects: [...fixtures, ca("one"), policy],
    });
    const ledgerTls = async () =>
      (await ownProjections(store))
        .get("payments/ledger")
        ?.backendTls.map((e) => e.caCertificatesPem);
    expect(await ledgerTls()).toEqual([pem("one")]);
    const before = await versions(store);

    clock.advance(5_000_000_000n);
    source.set([...fixtures, ca("two"), policy]);
    await waitFor(async () => (await ledgerTls())?.[0] === pem("two"));
    await c.idle();
    const after = await versions(store);
    expect(after["payments/ledger"]).toBe(formatVersion(T0 + 5_000_000_000n));
    expect(after["shop/checkout"]).toBe(before["shop/checkout"]);

    source.set([...fixtures, policy]);
    await waitFor(() => c.status().rejections.length === 1);
    await c.idle();
    expect(c.status().rejections[0]).toMatchObject({
      route: { kind: "BackendTLSPolicy", namespace: "payments", name: "ledger-tls" },
      reason: "invalid_ca_certificate_ref",
    });
    expect(await ledgerTls()).toEqual([]);
  });

  it("exports a VirtualHost with its Service, rejects a newer claim on its name for another Service, and hands the name over once the older one is gone", async () => {
    const clock = fakeClock();
    const host = (
      namespace: string,
      name: string,
      service: string,
      created: string,
    ): KubeObject => ({
      apiVersion: "mesh.aether.dev/v1alpha1",
      kind: "VirtualHost",
      metadata: { namespace, name, creationTimestamp: created },
      spec: {
        targetRef: { group: "", kind: "Service", name: service },
        hostnames: ["store.example.com"],
      },
    });
    // Two namespaces claim one name: a host name belongs to one Service of the cluster.
    const older = host("shop", "checkout-names", "checkout", "2026-01-01T00:00:00Z");
    const newer = host("web", "frontend-names", "frontend", "2026-01-02T00:00:00Z");
    const fixtures = await readManifestObjects();
    const { store, source, c } = await exportingFixtures({
      clock: clock.now,
      objects: [...fixtures, older, newer],
    });
    const names = async () => {
      const own = await ownProjections(store);
      return ["shop/checkout", "web/frontend"].map((s) =>
        own.get(s)?.virtualHosts.map((v) => v.name),
      );
    };
    expect(await names()).toEqual([["checkout-names"], []]);
    expect(c.status().rejections).toMatchObject([
      {
        route: { kind: "VirtualHost", namespace: "web", name: "frontend-names" },
        reason: "conflicted",
      },
    ]);

    clock.advance(5_000_000_000n);
    source.set([...fixtures, newer]);
    await waitFor(
      async () => JSON.stringify(await names()) === JSON.stringify([[], ["frontend-names"]]),
    );
    await c.idle();
    expect(c.status().rejections).toEqual([]);
    // Both services changed and were exported again at the edit's time.
    const after = await versions(store);
    for (const service of ["shop/checkout", "web/frontend"]) {
      expect(after[service]?.startsWith(formatVersion(T0 + 5_000_000_000n).slice(0, 19))).toBe(
        true,
      );
    }
  });

  it("compares content without version and origin", () => {
    const a = makeProjection("shop/a", { version: formatVersion(T0), origin: "hub" });
    const b = makeProjection("shop/a", { version: formatVersion(T0 + 1n), origin: "spoke" });
    expect(projectionContent(a)).toEqual(projectionContent(b));
    expect(projectionContent(a)).not.toEqual(
      projectionContent(makeProjection("shop/a", { backend: "shop/b" })),
    );
  });

  it("stop() gives up leadership and stops the source", async () => {
    const source = createMemoryObjectSource(await readManifestObjects());
    const leadership = createManualLeadership();
    const c = controller({ source, store: createMemoryStore({ origin: "hub" }), leadership });
    c.start();
    await c.stop();
    expect(leadership.calls.stop).toBe(1);
    expect(source.calls.stop).toBe(1);
    expect(c.status().state).toBe("stopped");
  });
});
