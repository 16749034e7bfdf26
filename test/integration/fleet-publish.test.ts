/**
 * Published import status over one real etcd: two in-process registrars of
 * different clusters (the hub, and west with `--local-source` reading
 * examples/local/west) each publish their header and one value per service
 * they serve (the served version theirs); a change on the hub reaches
 * west's published values; each registrar's feed sees both clusters; the
 * local override yields a digest for exactly its service; and a forged,
 * undecodable status value under another cluster's key is skipped and
 * counted.
 */
import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ServiceImportStatus } from "../../gen/aether/registry/v1/fleet_pb.js";
import { localDigests, projectLocalRoutes } from "../../services/common/local-projection.js";
import { replicaHeaderKey } from "../../services/common/status-layout.js";
import type { StatusFeed } from "../../services/registrar/fleet/fleet-inputs.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { readManifestObjects } from "../support/memory-source.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { scrapeMetric } from "../support/scrape-metric.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("fp");
const running: TestRegistrar[] = [];
const LOCAL_WEST = resolve(import.meta.dirname, "../../examples/local/west");

afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

async function registrar(prefix: string, cluster: string, extra: string[] = []) {
  const started = await startTestRegistrar([
    "--cluster",
    cluster,
    "--store",
    "etcd",
    "--etcd-endpoints",
    shared.etcd.endpoint,
    "--etcd-prefix",
    prefix,
    "--replica-id",
    `${cluster}-0`,
    "--status-interval",
    "100ms",
    "--status-heartbeat",
    "1s",
    ...extra,
  ]);
  running.push(started);
  return started;
}

/** The service values a feed holds for one cluster's replica, by service. */
function published(feed: StatusFeed, cluster: string): Map<string, ServiceImportStatus> {
  for (const replica of feed.replicas()) {
    if (replica.cluster === cluster && replica.header !== undefined) {
      return new Map(replica.services);
    }
  }
  return new Map();
}

function clustersWithHeaders(feed: StatusFeed): string[] {
  return [...feed.replicas()]
    .filter((r) => r.header !== undefined)
    .map((r) => r.cluster)
    .sort();
}

describe("published import status on etcd", () => {
  it("publishes each cluster's served versions and local digests, follows the hub, skips forged values", async () => {
    const prefix = shared.freshPrefix();
    const hub = await registrar(prefix, "hub");
    const west = await registrar(prefix, "west", ["--local-source", `dir:${LOCAL_WEST}`]);
    const v1 = versionAt(1);
    await hub.registrar.store.put(makeProjection("shop/web", { version: v1 }));
    await hub.registrar.store.put(makeProjection("shop/checkout", { version: v1 }));

    // Both feeds see both clusters' headers.
    for (const feed of [hub.registrar.statusFeed, west.registrar.statusFeed]) {
      await waitFor(
        () => clustersWithHeaders(feed).join() === "hub,west",
        10_000,
        "both clusters' headers in a feed",
      );
    }

    // West publishes the hub's versions it serves, and a digest only for its local override.
    const expectedDigest = localDigests(
      projectLocalRoutes(await readManifestObjects(LOCAL_WEST)).projections,
    ).get("shop/checkout");
    expect(expectedDigest).toMatch(/^[0-9a-f]{64}$/);
    const feed = hub.registrar.statusFeed;
    await waitFor(
      () => {
        const values = published(feed, "west");
        return (
          values.get("shop/web")?.version === v1 && values.get("shop/checkout")?.version === v1
        );
      },
      10_000,
      "west's published shop/web and shop/checkout at v1",
    );
    const westValues = published(feed, "west");
    expect(westValues.get("shop/web")?.originCluster).toBe("hub");
    expect(westValues.get("shop/web")?.localDigest).toBe("");
    expect(westValues.get("shop/checkout")?.localDigest).toBe(expectedDigest);
    for (const [service, value] of westValues) {
      if (service !== "shop/checkout") expect(value.localDigest, service).toBe("");
    }
    // What it publishes is what it serves.
    const served = west.registrar.cache.snapshot(new Set(["shop/web"]), "effective").entries;
    expect(served.map((e) => e.projection.version)).toEqual([v1]);
    const westHeader = [...feed.replicas()].find((r) => r.cluster === "west")?.header;
    expect(westHeader).toMatchObject({ localSource: true, synced: true });
    expect(westHeader?.services).toBe(westValues.size);
    // And the hub's own published values reach west's feed (in their own time).
    await waitFor(
      () => published(west.registrar.statusFeed, "hub").get("shop/web")?.version === v1,
      10_000,
      "the hub's published shop/web at v1 in west's feed",
    );

    // A change on the hub reaches west's published value.
    const v2 = versionAt(2);
    await hub.registrar.store.put(makeProjection("shop/web", { version: v2 }));
    await waitFor(
      () => published(feed, "west").get("shop/web")?.version === v2,
      10_000,
      "west's published shop/web at v2",
    );

    // A forged, undecodable header under another cluster's key is skipped and counted.
    await shared.raw
      .put(replicaHeaderKey(prefix, "forged", "r1"))
      .value(Buffer.from([0xff, 0xff, 0xff]));
    const metric = "aether_config_status_feed_invalid_values_total";
    await waitFor(
      async () => ((await scrapeMetric(west.url, metric)) ?? 0) >= 1,
      10_000,
      "the forged value counted",
    );
    expect(clustersWithHeaders(west.registrar.statusFeed)).toEqual(["hub", "west"]);
    expect(await scrapeMetric(west.url, "aether_config_import_status_services")).toBe(
      westValues.size,
    );
    expect(
      await scrapeMetric(west.url, 'aether_config_import_status_writes_total{result="ok"}'),
    ).toBeGreaterThan(0);
  }, 60_000);
});
