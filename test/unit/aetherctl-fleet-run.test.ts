/**
 * `aetherctl fleet` over a real socket: the registrar's ConfigService
 * handlers, given the fleet view's shell (fake feed, real in-memory cache)
 * as their `fleetStatus` option, receive the filters, and aetherctl prints
 * the table or proto JSON.
 */
import { createServer, type Server } from "node:http";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigService } from "../../gen/aether/registry/v1/config_service_pb.js";
import type { GetFleetStatusRequest } from "../../gen/aether/registry/v1/fleet_pb.js";
import { createImportPolicy } from "../../services/common/import-policy.js";
import { createConfigCache } from "../../services/registrar/cache/config-cache.js";
import { createFleetView } from "../../services/registrar/fleet/fleet-view.js";
import { createConfigService } from "../../services/registrar/service/config-service.js";
import { createMemoryStore } from "../../services/registrar/store/memory-store.js";
import { runAetherctlInProcess } from "../support/aetherctl-in-process.js";
import { replica } from "../support/fleet-replicas.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

const NOW = Date.parse("2026-11-01T00:10:00Z");
let server: Server;
let url: string;
const requests: GetFleetStatusRequest[] = [];
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  const store = createMemoryStore({ origin: "hub" });
  const cache = createConfigCache({ store, policy: createImportPolicy() });
  cache.start();
  cleanups.push(() => cache.stop());
  await cache.whenSynced();
  const revision = await store.put(makeProjection("shop/cart", { version: versionAt(2) }));
  await waitFor(() => cache.revision >= revision);
  const replicas = [
    replica({
      cluster: "east",
      publishedMs: NOW,
      services: { "shop/cart": { origin: "hub", version: versionAt(2), agents: [3, 0, 0] } },
    }),
  ];
  const view = createFleetView({
    feed: { synced: true, replicas: () => replicas, onChange: () => () => undefined },
    cache,
    clock: () => NOW,
  });
  cleanups.push(() => view.stop());
  const service = createConfigService({
    origin: "hub",
    store,
    cache,
    policy: createImportPolicy(),
    fleetStatus(request) {
      requests.push(request);
      return view.fleetStatus(request);
    },
  });
  const handler = connectNodeAdapter({
    routes: (router) => router.service(ConfigService, service),
  });
  server = createServer(handler);
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await new Promise((done) => server.close(done));
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe("aetherctl fleet against a server", () => {
  it("sends the filters and prints the table", async () => {
    const result = await runAetherctlInProcess([
      "--registrar",
      url,
      "fleet",
      "--service",
      "shop/cart",
      "--cluster",
      "east",
      "--state",
      "in_sync",
      "--limit",
      "10",
    ]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(requests.at(-1)).toMatchObject({
      services: ["shop/cart"],
      clusters: ["east"],
      states: [1],
      limit: 10,
    });
    expect(result.stdout).toContain(
      `shop/cart  hub     ${versionAt(2)}  in_sync  -     east:in_sync 3/3`,
    );
  });

  it("prints proto JSON with -o json", async () => {
    const result = await runAetherctlInProcess(["--registrar", url, "-o", "json", "fleet"]);
    expect(result.code).toBe(0);
    const json = JSON.parse(result.stdout);
    expect(json.matchingServices).toBe(1);
    expect(json.services[0]).toMatchObject({
      service: "shop/cart",
      state: "FLEET_STATE_IN_SYNC",
      clusters: [{ cluster: "east", version: versionAt(2), versionsBehind: 0 }],
    });
    expect(json.clusters[0]).toMatchObject({ cluster: "east", stale: false, replicas: 1 });
  });
});
