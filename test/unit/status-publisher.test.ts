/**
 * The status publisher's shell over a memory status store, with a fake
 * cache, agents view and feed: it publishes a value per served service and
 * the header in one round; a restarted publisher reads its old values and
 * rewrites nothing unchanged; agent changes are published; a failing store
 * is counted and retried; a dead replica of its own cluster is deleted.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { ImportStatusReplicaSchema } from "../../gen/aether/registry/v1/fleet_pb.js";
import { replicaHeaderKey, serviceStatusKey } from "../../services/common/status-layout.js";
import { EMPTY_STATUS_FEED } from "../../services/registrar/fleet/empty-inputs.js";
import type {
  AgentReportsView,
  PublishedReplica,
  StatusFeed,
} from "../../services/registrar/fleet/fleet-inputs.js";
import {
  createStatusPublisher,
  type StatusPublisher,
  type StatusPublisherOptions,
} from "../../services/registrar/fleet/status-publisher.js";
import { createMemoryBackend } from "../../services/registrar/store/memory-backend.js";
import type { StatusStore } from "../../services/registrar/store/status-store.js";
import { createMemoryStatusStore } from "../../services/registrar/store/status-store-memory.js";
import { waitFor } from "../support/wait.js";

const PREFIX = "/aether/v1";
const running: StatusPublisher[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop()));
});

/** A synced cache serving `services` at their versions (origin hub), refusing nothing. */
function fakeCache(
  served: Record<string, string>,
): StatusPublisherOptions["cache"] & { serve(service: string, version: string): void } {
  const entries = () =>
    Object.entries(served).map(([service, version]) => ({
      origin: "hub",
      service,
      projection: { service, version },
      value: new Uint8Array(),
      modRevision: 1,
    }));
  let revision = 7;
  return {
    state: "synced",
    get revision() {
      return revision;
    },
    snapshot: () => ({ entries: entries(), revision }),
    rejections: () => [],
    serve(service, version) {
      served[service] = version;
      revision++;
    },
  };
}

/** An agents view whose in-sync count of `shop/web` the test sets. */
function fakeAgents() {
  const listeners = new Set<() => void>();
  let inSync = 0;
  const view: AgentReportsView = {
    reportedServices: () => (inSync > 0 ? ["shop/web"] : []),
    serviceAgents: (service) => ({
      tally: { inSync: service === "shop/web" ? inSync : 0, behind: 0, rejecting: 0, notReady: 0 },
      rejections: [],
    }),
    totals: () => ({ inSync, behind: 0, rejecting: 0, notReady: 0 }),
    onChange: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return {
    view,
    set(count: number) {
      inSync = count;
      for (const listener of listeners) listener();
    },
  };
}

function publisher(
  store: StatusStore,
  overrides: Partial<StatusPublisherOptions> = {},
): { publisher: StatusPublisher; registry: Registry } {
  const registry = new Registry();
  const created = createStatusPublisher({
    store,
    replica: "r1",
    cache: fakeCache({ "shop/web": "v1", "shop/cart": "v2" }),
    agents: fakeAgents().view,
    feed: EMPTY_STATUS_FEED,
    controlCluster: "",
    intervalMs: 20,
    heartbeatMs: 60_000,
    registry,
    ...overrides,
  });
  running.push(created);
  return { publisher: created, registry };
}

async function metric(registry: Registry, name: string, result?: string): Promise<number> {
  const found = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (found?.values ?? []) as { value: number; labels: Record<string, unknown> }[];
  return values.find((v) => result === undefined || v.labels.result === result)?.value ?? 0;
}

describe("status publisher", () => {
  it("publishes every served service and the header in one round, then nothing unchanged after a restart", async () => {
    const backend = createMemoryBackend();
    const store = createMemoryStatusStore({ backend, cluster: "east", prefix: PREFIX });
    const first = publisher(store);
    const flushed = first.publisher.whenFlushed();
    first.publisher.start();
    await flushed;
    const listed = await store.list();
    const described = listed.entries
      .map((e) =>
        e.kind === "replica" ? `header ${e.header.services}` : `${e.service} ${e.status.version}`,
      )
      .sort();
    expect(described).toEqual(["header 2", "shop/cart v2", "shop/web v1"]);
    expect(new Set(listed.entries.map((e) => e.modRevision)).size).toBe(1);
    expect(await metric(first.registry, "aether_config_import_status_services")).toBe(2);
    await first.publisher.stop();

    const before = backend.revision;
    const second = publisher(store);
    const again = second.publisher.whenFlushed();
    second.publisher.start();
    await again;
    expect(backend.revision).toBe(before);
    expect(await metric(second.registry, "aether_config_import_status_writes_total", "ok")).toBe(0);
  });

  it("publishes a change of what the cache serves (its revision moved)", async () => {
    const store = createMemoryStatusStore({
      backend: createMemoryBackend(),
      cluster: "east",
      prefix: PREFIX,
    });
    const cache = fakeCache({ "shop/web": "v1" });
    const { publisher: p } = publisher(store, { cache });
    const flushed = p.whenFlushed();
    p.start();
    await flushed;
    cache.serve("shop/web", "v2");
    await waitFor(
      async () =>
        (await store.list()).entries.some((e) => e.kind === "service" && e.status.version === "v2"),
      5_000,
      "shop/web at v2 published",
    );
  });

  it("publishes what the agents report when they change", async () => {
    const store = createMemoryStatusStore({
      backend: createMemoryBackend(),
      cluster: "east",
      prefix: PREFIX,
    });
    const agents = fakeAgents();
    const { publisher: p } = publisher(store, { agents: agents.view });
    const flushed = p.whenFlushed();
    p.start();
    await flushed;
    agents.set(3);
    await waitFor(
      async () => {
        const entries = (await store.list()).entries;
        const web = entries.find((e) => e.kind === "service" && e.service === "shop/web");
        const header = entries.find((e) => e.kind === "replica");
        return (
          web?.kind === "service" &&
          web.status.agents?.inSync === 3 &&
          header?.kind === "replica" &&
          header.header.agents?.inSync === 3
        );
      },
      5_000,
      "the agents' counts published",
    );
  });

  it("counts a failed write and retries it", async () => {
    const inner = createMemoryStatusStore({
      backend: createMemoryBackend(),
      cluster: "east",
      prefix: PREFIX,
    });
    let failures = 2;
    const flaky: StatusStore = {
      ...inner,
      write: async (changes) => {
        if (failures > 0) {
          failures--;
          throw new Error("etcd is away");
        }
        return inner.write(changes);
      },
    };
    const { publisher: p, registry } = publisher(flaky);
    p.start();
    await waitFor(
      async () => (await inner.list()).entries.length === 3,
      5_000,
      "the values after retries",
    );
    expect(await metric(registry, "aether_config_import_status_writes_total", "error")).toBe(2);
    expect(
      await metric(registry, "aether_config_import_status_writes_total", "ok"),
    ).toBeGreaterThan(0);
  });

  it("deletes another replica of its own cluster whose header is older than 10 heartbeats, not a fresh one", async () => {
    const store = createMemoryStatusStore({
      backend: createMemoryBackend(),
      cluster: "east",
      prefix: PREFIX,
    });
    const header = (ms: number) =>
      create(ImportStatusReplicaSchema, {
        publishedTime: { seconds: BigInt(Math.floor(ms / 1000)), nanos: 0 },
      });
    const old = Date.now() - 11 * 60_000;
    await store.write([
      {
        type: "put",
        key: replicaHeaderKey(PREFIX, "east", "dead"),
        value: toBinary(ImportStatusReplicaSchema, header(old)),
      },
      {
        type: "put",
        key: serviceStatusKey(PREFIX, "east", "dead", "shop/web"),
        value: new Uint8Array(),
      },
      {
        type: "put",
        key: replicaHeaderKey(PREFIX, "east", "alive"),
        value: toBinary(ImportStatusReplicaSchema, header(Date.now())),
      },
    ]);
    const replicas: PublishedReplica[] = [
      {
        cluster: "east",
        replica: "dead",
        header: header(old),
        services: new Map([["shop/web", {} as never]]),
        seenAtMs: old,
      },
      {
        cluster: "east",
        replica: "alive",
        header: header(Date.now()),
        services: new Map(),
        seenAtMs: Date.now(),
      },
      { cluster: "west", replica: "dead", header: header(old), services: new Map(), seenAtMs: old },
    ];
    const feed: StatusFeed = { synced: true, replicas: () => replicas, onChange: () => () => {} };
    const { publisher: p } = publisher(store, { feed });
    p.start();
    await waitFor(
      async () => !(await store.list()).entries.some((e) => e.replica === "dead"),
      5_000,
      "the dead replica's keys deleted",
    );
    const left = (await store.list()).entries.map((e) => `${e.replica} ${e.kind}`).sort();
    expect(left).toEqual(["alive replica", "r1 replica", "r1 service", "r1 service"]);
  });
});
