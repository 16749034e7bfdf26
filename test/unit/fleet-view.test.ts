/**
 * The fleet view's shell over a fake status feed and a real in-memory
 * config cache: the history of current versions it follows, the errors it
 * answers with, and the fleet gauges (bounded labels, cached, a vanished
 * cluster removed).
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { FleetState, GetFleetStatusRequestSchema } from "../../gen/aether/registry/v1/fleet_pb.js";
import type { FleetReplicaInput } from "../../services/common/fleet-replicas.js";
import { createImportPolicy } from "../../services/common/import-policy.js";
import {
  type ConfigCache,
  createConfigCache,
} from "../../services/registrar/cache/config-cache.js";
import type { StatusFeed } from "../../services/registrar/fleet/fleet-inputs.js";
import {
  createFleetView,
  type FleetStatusView,
} from "../../services/registrar/fleet/fleet-view.js";
import { createMemoryStore } from "../../services/registrar/store/memory-store.js";
import { replica } from "../support/fleet-replicas.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

const NOW = Date.parse("2026-11-01T00:10:00Z");

/** A status feed the test fills (a unit-test fake). */
function fakeFeed() {
  let replicas: FleetReplicaInput[] = [];
  const listeners = new Set<() => void>();
  const feed: StatusFeed & { synced: boolean } = {
    synced: false,
    replicas: () => replicas,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return {
    feed,
    set(next: FleetReplicaInput[]) {
      feed.synced = true;
      replicas = next;
      for (const l of listeners) l();
    },
  };
}

const stops: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

async function setup(metricsCacheMs = 1000) {
  const store = createMemoryStore({ origin: "hub" });
  const cache: ConfigCache = createConfigCache({ store, policy: createImportPolicy() });
  cache.start();
  stops.push(() => cache.stop());
  await cache.whenSynced();
  const { feed, set } = fakeFeed();
  const registry = new Registry();
  let now = NOW;
  const view: FleetStatusView = createFleetView({
    feed,
    cache,
    clock: () => now,
    metrics: { registry },
    metricsCacheMs,
  });
  stops.push(() => view.stop());
  const put = async (service: string, n: number) => {
    const revision = await store.put(makeProjection(service, { version: versionAt(n) }));
    await waitFor(() => cache.revision >= revision);
  };
  const remove = async (service: string) => {
    const revision = await store.delete(service);
    expect(revision).toBeDefined();
    await waitFor(() => cache.revision >= (revision ?? 0));
  };
  return { view, set, registry, put, remove, advance: (ms: number) => (now += ms) };
}

const request = (fields: Parameters<typeof create<typeof GetFleetStatusRequestSchema>>[1] = {}) =>
  create(GetFleetStatusRequestSchema, fields);

function codeOf(run: () => unknown): Code | undefined {
  try {
    run();
  } catch (error) {
    return error instanceof ConnectError ? error.code : undefined;
  }
  return undefined;
}

const east = (version: string | undefined, publishedMs = NOW) =>
  replica({
    cluster: "east",
    publishedMs,
    agents: [2, 0, 0, 1],
    services:
      version === undefined
        ? {}
        : { "shop/cart": { origin: "hub", version, agents: [2, 0, 0], digest: "" } },
  });

describe("fleet view", () => {
  it("answers UNAVAILABLE until the feed is synced, INVALID_ARGUMENT for a bad request", async () => {
    const { view, set } = await setup();
    expect(codeOf(() => view.fleetStatus(request()))).toBe(Code.Unavailable);
    expect(view.metrics()).toBeUndefined();
    set([]);
    expect(codeOf(() => view.fleetStatus(request({ limit: 5000 })))).toBe(Code.InvalidArgument);
    expect(codeOf(() => view.fleetStatus(request({ services: ["nope"] })))).toBe(
      Code.InvalidArgument,
    );
    expect(view.fleetStatus(request()).synced).toBe(true);
  });

  it("judges clusters against the cache's current version and the versions it saw", async () => {
    const { view, set, put } = await setup();
    for (const n of [1, 2, 3]) await put("shop/cart", n);
    set([east(versionAt(1))]);
    const response = view.fleetStatus(request());
    expect(response.services).toHaveLength(1);
    const [service] = response.services;
    expect(service).toMatchObject({
      service: "shop/cart",
      version: versionAt(3),
      state: FleetState.BEHIND,
    });
    expect(service?.clusters[0]).toMatchObject({
      cluster: "east",
      version: versionAt(1),
      versionsBehind: 2,
    });
    expect(service?.skewVersions).toBe(2);

    set([east(versionAt(3))]);
    expect(view.fleetStatus(request()).services[0]?.state).toBe(FleetState.IN_SYNC);
  });

  it("summarises the asked services for the fleet condition, none before the feed is synced", async () => {
    const { view, set, put } = await setup();
    for (const n of [1, 2]) await put("shop/cart", n);
    await put("shop/other", 1);
    const asked = new Set(["shop/cart", "shop/none"]);
    expect(view.summaries(asked).size).toBe(0);
    set([east(versionAt(1))]);
    expect([...view.summaries(asked)]).toEqual([
      [
        "shop/cart",
        {
          version: versionAt(2),
          clusters: [{ cluster: "east", state: "behind", version: versionAt(1), reasons: [] }],
        },
      ],
    ]);
    let changes = 0;
    const unsubscribe = view.onChange(() => changes++);
    set([east(versionAt(2))]);
    unsubscribe();
    set([east(versionAt(2))]);
    expect(changes).toBe(1);
    expect(view.summaries(asked).get("shop/cart")?.clusters[0]?.state).toBe("in_sync");
  });

  it("drops a service's history when its projection is deleted", async () => {
    const { view, set, put, remove } = await setup();
    await put("shop/cart", 1);
    await put("shop/gone", 1);
    set([east(versionAt(1))]);
    expect(view.fleetStatus(request()).services.map((s) => s.service)).toEqual([
      "shop/gone",
      "shop/cart",
    ]);
    await remove("shop/gone");
    await remove("shop/cart");
    const response = view.fleetStatus(request());
    // shop/cart is still reported by east, but this registrar has no current version of it.
    expect(response.services.map((s) => [s.service, s.version])).toEqual([["shop/cart", ""]]);
  });

  it("fills the fleet gauges per cluster, reuses them for a second and removes a vanished cluster", async () => {
    const { set, put, registry, advance } = await setup();
    await put("shop/cart", 2);
    set([east(versionAt(1)), replica({ cluster: "west", publishedMs: NOW - 120_000 })]);
    const text = await registry.metrics();
    expect(text).toContain('aether_config_fleet_cluster_stale{cluster="east"} 0');
    expect(text).toContain('aether_config_fleet_cluster_stale{cluster="west"} 1');
    expect(text).toContain('aether_config_fleet_cluster_services{cluster="east",state="behind"} 1');
    expect(text).toContain(
      'aether_config_fleet_cluster_agents{cluster="east",state="not_ready"} 1',
    );
    expect(text).toContain(
      `aether_config_fleet_cluster_last_report_timestamp_seconds{cluster="east"} ${NOW / 1000}`,
    );
    expect(text).toMatch(/aether_config_fleet_cluster_behind_seconds\{cluster="east"\} [1-9]/);
    expect(text).toMatch(/aether_config_fleet_max_skew_seconds 0\.?/);
    expect(text).not.toMatch(/service=/);

    set([east(versionAt(2))]);
    // Within the second the same numbers are served.
    expect(await registry.metrics()).toContain(
      'aether_config_fleet_cluster_stale{cluster="west"} 1',
    );
    advance(1000);
    const later = await registry.metrics();
    expect(later).not.toContain('cluster="west"');
    expect(later).toContain(
      'aether_config_fleet_cluster_services{cluster="east",state="in_sync"} 1',
    );
  });
});
