/**
 * The console's live feed (`clients/console/src/live/follow-watch.ts`) run
 * in Node over connect-web's transport (fetch streaming, as in the browser)
 * through `aetherctl dashboard` to a real registrar on a real etcd: the
 * first snapshot, a change as it happens (with its history), the stream
 * down when the registrar stops (with the reason), and back by resuming
 * when a registrar serves the same store on the same port again, with the
 * change made meanwhile listed once.
 */
import { createServer } from "node:net";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FollowedFeed, followWatch } from "../../clients/console/src/live/follow-watch.js";
import { ConfigService } from "../../gen/aether/registry/v1/config_service_pb.js";
import { createRegistrar, type Registrar } from "../../services/registrar/registrar.js";
import { parseRegistrarFlags } from "../../services/registrar/registrar-flags.js";
import { type RunningDashboard, startDashboard } from "../support/dashboard-run.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("console-live");
let prefix: string;
let port: number;
let registrar: Registrar | undefined;
let dashboard: RunningDashboard;
let feed: FollowedFeed;

/** A free loopback port. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return address.port;
}

/** A registrar of cluster hub on `port` over the shared etcd's `prefix`. */
async function startHub(): Promise<Registrar> {
  const config = parseRegistrarFlags([
    ...["--cluster", "hub", "--store", "etcd", "--etcd-endpoints", shared.etcd.endpoint],
    ...["--etcd-prefix", prefix, "--listen", `127.0.0.1:${port}`],
  ]);
  if (config === "help") throw new Error("unexpected --help");
  const started = createRegistrar({ config, processMetrics: false });
  await started.start();
  await started.cache.whenSynced();
  return started;
}

beforeAll(async () => {
  prefix = shared.freshPrefix();
  port = await freePort();
  registrar = await startHub();
  await registrar.store.put(makeProjection("shop/cart", { version: versionAt(1) }));
  await registrar.store.put(makeProjection("shop/orders", { version: versionAt(1) }));
  dashboard = await startDashboard(["--registrar", `http://127.0.0.1:${port}`]);
  const client = createClient(ConfigService, createConnectTransport({ baseUrl: dashboard.url }));
  // Both puts in the registrar's cache first: the feed's first snapshot then holds both.
  await waitFor(
    async () => (await client.listAllConfig({})).projections.length === 2,
    10_000,
    "the registrar's cache",
  );
  feed = followWatch(client);
}, 60_000);

afterAll(async () => {
  feed?.stop();
  await dashboard?.stop();
  await registrar?.stop();
});

describe("the console's live feed through the dashboard", () => {
  it("holds the first snapshot, then each change with its history", async () => {
    await waitFor(() => feed.current().synced, 10_000, "the first snapshot");
    const first = feed.current();
    expect(first.connection).toBe("live");
    expect([...first.projections.keys()].sort()).toEqual(["shop/cart", "shop/orders"]);
    expect(first.changes).toEqual([]);
    await registrar?.store.put(makeProjection("shop/cart", { version: versionAt(2) }));
    await waitFor(() => feed.current().changes.length === 1, 10_000, "the change");
    const now = feed.current();
    expect(now.changes[0]).toMatchObject({
      type: "upsert",
      service: "shop/cart",
      version: versionAt(2),
    });
    expect(now.projections.get("shop/cart")?.version).toBe(versionAt(2));
    expect(now.history.get("shop/cart")?.map((seen) => seen.version)).toEqual([
      versionAt(1),
      versionAt(2),
    ]);
    expect(now.revision).toBeGreaterThan(first.revision);
  });

  it("says the stream is down when the registrar stops, and resumes when it is back", async () => {
    await registrar?.stop();
    registrar = undefined;
    await waitFor(() => feed.current().connection !== "live", 10_000, "the stream down");
    await waitFor(() => feed.current().connection === "down", 10_000, "the stream down");
    expect(feed.current().error).not.toBe("");
    const before = feed.current();

    registrar = await startHub();
    await registrar.store.put(makeProjection("shop/orders", { version: versionAt(3) }));
    await waitFor(
      () => feed.current().projections.get("shop/orders")?.version === versionAt(3),
      20_000,
      "the change made while it was down",
    );
    const after = feed.current();
    expect(after.connection).toBe("live");
    expect(after.error).toBe("");
    expect(after.resumedAt).toBeGreaterThanOrEqual(before.since);
    expect(after.changes.filter((c) => c.service === "shop/orders")).toHaveLength(1);
    expect(after.projections.get("shop/cart")?.version).toBe(versionAt(2));
  });
});
