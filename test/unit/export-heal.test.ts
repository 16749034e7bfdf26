/**
 * The export controller heals its own keys over the embedded store: a value
 * another writer puts or deletes under the hub's origin within a term is put
 * right by the next reconcile and counted once as a repair; the controller's
 * own writes never count; only the leader heals, and a deposed leader's
 * repair is fenced off; the watch follows term ends, stop() and failures.
 */
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { projectionContent } from "../../services/common/projection-content.js";
import { formatVersion, parseVersion } from "../../services/common/projection-version.js";
import { projectServices } from "../../services/common/projector.js";
import {
  createExportController,
  type ExportController,
  type ExportControllerOptions,
} from "../../services/registrar/export/export-controller.js";
import { createExportMetrics } from "../../services/registrar/export/export-metrics.js";
import { createAlwaysLeader } from "../../services/registrar/export/leader-election.js";
import {
  type ConfigStore,
  StoreCompactedError,
  StoreUnavailableError,
  type WatchHandler,
} from "../../services/registrar/store/config-store.js";
import {
  createMemoryBackend,
  createMemoryStore,
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

const FOREIGN = "another writer changed an own key";
const REPAIRED = "repaired own keys another writer had changed";

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

/** The projector's projection of `service` in `objects`, stamped as the hub stores it. */
function desired(objects: readonly KubeObject[], service: string, version: string) {
  const projection = projectServices(objects).projections.find((p) => p.service === service);
  return { ...(projection as ServiceConfigProjection), version, originCluster: "hub" };
}

/** Resolves once `store` holds the projector's projection of `service` (any version). */
async function healed(store: ConfigStore, objects: readonly KubeObject[], service: string) {
  await waitFor(
    async () => {
      const stored = (await ownProjections(store)).get(service);
      return stored !== undefined && sameContent(stored, desired(objects, service, stored.version));
    },
    5_000,
    `${service} to be repaired`,
  );
}

/** Whether `a` and `b` have the same content (version and origin aside). */
function sameContent(a: ServiceConfigProjection, b: ServiceConfigProjection): boolean {
  return Buffer.from(projectionContent(a)).equals(projectionContent(b));
}

/** A metric sample of `registry`, or undefined when it is not there. */
async function sample(registry: Registry, name: string): Promise<number | undefined> {
  const text = await registry.metrics();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}
const repairs = (registry: Registry, kind: string) =>
  sample(registry, `aether_config_export_repairs_total{kind="${kind}"}`);

/**
 * A controller (always the leader) exporting the fixtures, another writer of
 * the hub's keys on the same backend, metrics and a log; resolves once the
 * three services are exported and the controller is idle.
 */
async function healing(options: Partial<ExportControllerOptions> = {}) {
  const objects = await readManifestObjects();
  const backend = createMemoryBackend();
  const store = options.store ?? createMemoryStore({ origin: "hub", backend });
  const other = createMemoryStore({ origin: "hub", backend });
  const source = createMemoryObjectSource(objects);
  const registry = new Registry();
  const log = captureLogger();
  const c = controller({
    clock: () => T0,
    metrics: createExportMetrics(registry),
    logger: log.logger,
    ...options,
    source,
    store,
  });
  c.start();
  await waitFor(async () => (await ownProjections(store)).size === 3, 2_000, "three exports");
  await c.idle();
  return { objects, store, other, source, registry, log, c };
}

describe("export controller: self-healing", () => {
  it("rewrites a foreign put of other content under its key, with a version above the forged one, and counts it once", async () => {
    const { objects, store, other, registry, log, c } = await healing();
    for (const kind of ["put", "delete", "foreign_put"])
      expect(await repairs(registry, kind)).toBe(0);
    const before = (await ownProjections(store)).get("shop/checkout") as ServiceConfigProjection;
    // Forged: other routes, a version one second ahead (within the importers' window).
    const forged = formatVersion(T0 + 1_000_000_000n);
    await other.put(makeProjection("shop/checkout", { backend: "rogue/sink", version: forged }));

    await healed(store, objects, "shop/checkout");
    await c.idle();
    const after = (await ownProjections(store)).get("shop/checkout") as ServiceConfigProjection;
    expect(parseVersion(after.version)).toBe(T0 + 1_000_000_001n);
    expect(parseVersion(after.version)).toBeGreaterThan(parseVersion(before.version) as bigint);
    expect(await repairs(registry, "put")).toBe(1);
    expect(await repairs(registry, "delete")).toBe(0);
    expect(c.status()).toMatchObject({ repairs: 1, writes: 4, state: "exporting" });
    const warned = log.withMessage(REPAIRED);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: 40, put: 1, services: ["shop/checkout"] });
    expect(log.withMessage(FOREIGN)).toHaveLength(1);
  });

  it("does not build on a forged far-future version: the repair is versioned by its clock", async () => {
    const { objects, store, other, registry, c } = await healing();
    await other.put(
      makeProjection("shop/checkout", {
        backend: "rogue/sink",
        version: "9999-12-31T23:59:59.999999999Z",
      }),
    );
    await healed(store, objects, "shop/checkout");
    await c.idle();
    const version = (await ownProjections(store)).get("shop/checkout")?.version as string;
    expect(parseVersion(version)).toBeGreaterThan(T0);
    expect(parseVersion(version)).toBeLessThan(T0 + 1_000n);
    expect(await repairs(registry, "put")).toBe(1);
  });

  it("puts back an exported service another writer deleted", async () => {
    const { objects, store, other, registry, c } = await healing();
    await other.delete("web/frontend");
    await healed(store, objects, "web/frontend");
    await c.idle();
    expect(await repairs(registry, "delete")).toBe(1);
    expect(await repairs(registry, "put")).toBe(0);
    expect(c.status().repairs).toBe(1);
  });

  it("deletes a foreign put of a service it does not export, unless the source reports problems", async () => {
    const { objects, store, other, source, registry, c } = await healing();
    await other.put(makeProjection("rogue/extra"));
    await waitFor(async () => !(await ownProjections(store)).has("rogue/extra"));
    await c.idle();
    expect(await repairs(registry, "foreign_put")).toBe(1);

    // While the source reports problems, unexports are held: the stray key stays.
    source.setProblems([{ where: "shop/services.yaml:1", message: "YAML error" }]);
    const reconciles = c.status().reconciles;
    await other.put(makeProjection("rogue/extra"));
    await waitFor(() => c.status().reconciles > reconciles, 2_000, "a reconcile");
    await c.idle();
    expect((await ownProjections(store)).has("rogue/extra")).toBe(true);
    expect(await repairs(registry, "foreign_put")).toBe(1);
    // Once the source is whole again, the next reconcile deletes it, and counts it.
    source.setProblems([]);
    source.set(structuredClone(objects));
    await waitFor(async () => !(await ownProjections(store)).has("rogue/extra"));
    await c.idle();
    expect(await repairs(registry, "foreign_put")).toBe(2);
  });

  it("a foreign write of exactly the desired content is no repair: nothing is written", async () => {
    const { objects, store, other, registry, c } = await healing();
    const reconciles = c.status().reconciles;
    const copy = desired(objects, "payments/ledger", formatVersion(T0 + 5n));
    await other.put(copy);
    await waitFor(() => c.status().reconciles > reconciles, 2_000, "a reconcile");
    await c.idle();
    expect((await ownProjections(store)).get("payments/ledger")?.version).toBe(copy.version);
    expect(c.status()).toMatchObject({ repairs: 0, writes: 3 });
    expect(await repairs(registry, "put")).toBe(0);
  });
});

/** `count` exported services `bulk/s<i>`, each with a canary route weighted `weight`/`100 - weight`. */
function bulk(count: number, weight: number): KubeObject[] {
  const objects: KubeObject[] = [];
  for (let i = 0; i < count; i++) {
    const namespace = "bulk";
    const name = `s${i}`;
    const service = (n: string): KubeObject => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: { namespace, name: n },
      spec: { ports: [{ port: 80 }] },
    });
    objects.push(service(name), service(`${name}-v2`), {
      apiVersion: "multicluster.x-k8s.io/v1alpha1",
      kind: "ServiceExport",
      metadata: { namespace, name },
    });
    objects.push({
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { namespace, name: `${name}-canary` },
      spec: {
        parentRefs: [{ group: "", kind: "Service", name, port: 80 }],
        rules: [
          {
            backendRefs: [
              { name, port: 80, weight },
              { name: `${name}-v2`, port: 80, weight: 100 - weight },
            ],
          },
        ],
      },
    });
  }
  return objects;
}

describe("export controller: its own writes are never repairs", () => {
  it("exports and edits many services (event before or after each write resolves): no foreign change, no repair, no extra reconcile", async () => {
    const services = 300;
    const store = createMemoryStore({ origin: "hub" });
    const source = createMemoryObjectSource(bulk(services, 90));
    const registry = new Registry();
    const log = captureLogger();
    const c = controller({
      source,
      store,
      metrics: createExportMetrics(registry),
      logger: log.logger,
    });
    c.start();
    await waitFor(async () => (await ownProjections(store)).size === services, 5_000);
    await c.idle();

    for (const weight of [80, 70, 60]) {
      const reconciles = c.status().reconciles;
      const revision = await store.revision();
      source.set(bulk(services, weight));
      await waitFor(() => c.status().reconciles > reconciles);
      await c.idle();
      // The embedded store delivers watch events in microtasks: after a turn
      // of the event loop every event of the burst has been classified, and
      // a foreign one would have asked for another reconcile.
      await new Promise((resolve) => setImmediate(resolve));
      await c.idle();
      expect(c.status().reconciles).toBe(reconciles + 1);
      expect(await store.revision()).toBeGreaterThan(revision);
    }
    expect(c.status()).toMatchObject({ repairs: 0, writes: services * 4 });
    expect(log.withMessage(FOREIGN)).toEqual([]);
    expect(log.withMessage(REPAIRED)).toEqual([]);
    for (const kind of ["put", "delete", "foreign_put"])
      expect(await repairs(registry, kind)).toBe(0);
  });
});

describe("export controller: who heals", () => {
  it("only the leader heals; a standby replica writes nothing", async () => {
    const objects = await readManifestObjects();
    const backend = createMemoryBackend();
    const electionKey = "/aether/v1/election/hub/export/a";
    const createRevision = backend.put(electionKey, new Uint8Array([1]));
    const make = () => {
      const registry = new Registry();
      const leadership = createManualLeadership();
      const c = controller({
        source: createMemoryObjectSource(objects),
        store: createMemoryStore({ origin: "hub", backend }),
        leadership,
        metrics: createExportMetrics(registry),
      });
      c.start();
      return { c, leadership, registry };
    };
    const leader = make();
    const standby = make();
    leader.leadership.elect({ key: electionKey, createRevision });
    const store = createMemoryStore({ origin: "hub", backend });
    await waitFor(async () => (await ownProjections(store)).size === 3);
    await leader.c.idle();

    await store.put(makeProjection("shop/checkout", { backend: "rogue/sink" }));
    await healed(store, objects, "shop/checkout");
    await leader.c.idle();
    await standby.c.idle();
    expect(leader.c.status().repairs).toBe(1);
    expect(standby.c.status()).toMatchObject({ state: "standby", writes: 0, repairs: 0 });
    expect(await repairs(standby.registry, "put")).toBe(0);
  });

  it("a deposed leader that has not noticed yet fights no one: its repair is fenced off and it relinquishes", async () => {
    const objects = await readManifestObjects();
    const edited = objects.map((o) =>
      o.kind === "HTTPRoute" && o.metadata?.name === "checkout-canary"
        ? (JSON.parse(JSON.stringify(o).replace('"weight":90', '"weight":70')) as KubeObject)
        : o,
    );
    const backend = createMemoryBackend();
    const store = createMemoryStore({ origin: "hub", backend });
    const key = "/aether/v1/election/hub/export/x";
    const oldLeadership = createManualLeadership();
    const old = controller({
      source: createMemoryObjectSource(objects),
      store: createMemoryStore({ origin: "hub", backend }),
      leadership: oldLeadership,
    });
    old.start();
    oldLeadership.elect({ key, createRevision: backend.put(key, new Uint8Array([1])) });
    await waitFor(async () => (await ownProjections(store)).size === 3);
    await old.idle();
    const oldWrites = old.status().writes;

    // Its lease expired; another replica (with a newer copy of the source) campaigned.
    backend.delete(key);
    const newLeadership = createManualLeadership();
    const next = controller({
      source: createMemoryObjectSource(edited),
      store: createMemoryStore({ origin: "hub", backend }),
      leadership: newLeadership,
    });
    next.start();
    newLeadership.elect({ key, createRevision: backend.put(key, new Uint8Array([2])) });
    await healed(store, edited, "shop/checkout");
    await waitFor(() => oldLeadership.relinquished.length === 1, 2_000, "the old term to end");
    await old.idle();
    await next.idle();
    expect(oldLeadership.relinquished[0]?.reason).toMatch(/fenced/);
    expect(old.status()).toMatchObject({ state: "standby", writes: oldWrites, repairs: 0 });
    expect(next.status().repairs).toBe(0);
    // Settled: nobody writes any more.
    const revision = backend.revision;
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.all([old.idle(), next.idle()]);
    expect(backend.revision).toBe(revision);
  });
});

describe("export controller: the watch of its keys", () => {
  /**
   * A store that counts the watches opened (the controller opens one after
   * each listing of its keys) and open, and can fail the open ones.
   */
  function watchedStore(inner: MemoryConfigStore) {
    let opened = 0;
    let lists = 0;
    const open = new Set<WatchHandler>();
    const store: ConfigStore = {
      ...inner,
      list: (options) => {
        lists++;
        return inner.list(options);
      },
      watch: (after, handler, filter) => {
        expect(filter).toEqual({ origin: "hub" });
        opened++;
        open.add(handler);
        const watch = inner.watch(after, handler, filter);
        return {
          cancel: async () => {
            open.delete(handler);
            await watch.cancel();
          },
        };
      },
    };
    return {
      store,
      get opened() {
        return opened;
      },
      get lists() {
        return lists;
      },
      get open() {
        return open.size;
      },
      failAll(error: Error) {
        for (const handler of [...open]) {
          open.delete(handler);
          handler.onError(error);
        }
      },
    };
  }

  it("lists again after the watch fails, and heals with the new watch", async () => {
    const inner = createMemoryStore({ origin: "hub" });
    const watched = watchedStore(inner);
    const { objects, store, registry, c } = await healing({ store: watched.store });
    expect(watched.opened).toBe(1);
    expect(watched.open).toBe(1);
    const reconciles = c.status().reconciles;
    watched.failAll(new StoreCompactedError("compacted", 2));
    await waitFor(() => watched.opened === 2 && watched.open === 1, 2_000, "a new watch");
    await c.idle();
    // The new listing found nothing to write.
    expect(c.status()).toMatchObject({ reconciles: reconciles + 1, writes: 3 });

    await inner.put(makeProjection("shop/checkout", { backend: "rogue/sink" }));
    await healed(store, objects, "shop/checkout");
    expect(await repairs(registry, "put")).toBe(1);
  });

  it("opens a watch that failed (store unreachable) again without listing, and heals what changed meanwhile", async () => {
    const inner = createMemoryStore({ origin: "hub" });
    const watched = watchedStore(inner);
    const { objects, registry, c } = await healing({ store: watched.store });
    const lists = watched.lists;
    watched.failAll(new StoreUnavailableError("etcd watch: the stream ended"));
    // Changed while no watch is open.
    await inner.delete("web/frontend");
    await healed(inner, objects, "web/frontend");
    await c.idle();
    expect(watched.opened).toBe(2);
    expect(watched.lists).toBe(lists); // the controller did not list again
    expect(await repairs(registry, "delete")).toBe(1);
  });

  it("cancels the watch when the term ends and on stop()", async () => {
    const objects = await readManifestObjects();
    const inner = createMemoryStore({ origin: "hub" });
    const watched = watchedStore(inner);
    const leadership = createManualLeadership();
    const c = controller({
      source: createMemoryObjectSource(objects),
      store: watched.store,
      leadership,
    });
    c.start();
    leadership.elect();
    await waitFor(async () => (await ownProjections(inner)).size === 3);
    expect(watched.open).toBe(1);
    leadership.depose();
    await waitFor(() => c.status().state === "standby" && watched.open === 0);

    // A standby does not heal.
    const revision = await inner.revision();
    await inner.put(makeProjection("shop/checkout", { backend: "rogue/sink" }));
    await new Promise((resolve) => setImmediate(resolve));
    await c.idle();
    expect(await inner.revision()).toBe(revision + 1);

    // The next term lists (and puts it right, as any stale key), then watches again.
    leadership.elect();
    await healed(inner, objects, "shop/checkout");
    await waitFor(() => watched.open === 1);
    expect(c.status().repairs).toBe(0);
    await c.stop();
    expect(watched.open).toBe(0);
  });
});
