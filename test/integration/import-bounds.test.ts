/**
 * The registrar's import side over a store holding what it must not choke
 * on: values over the projection byte limit (rejected as `too_large` from
 * their length, never decoded, served to nobody, counted) and twenty
 * thousand junk keys (counted, logged in a handful of lines). The other
 * projections are served as ever.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import {
  ConfigService,
  ConfigView,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import {
  PathMatchType,
  RouteKind,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { DEFAULT_PROJECTION_LIMITS } from "../../services/common/projection-limits.js";
import { createRegistrar, type Registrar } from "../../services/registrar/registrar.js";
import {
  parseRegistrarFlags,
  type RegistrarConfig,
} from "../../services/registrar/registrar-flags.js";
import {
  createMemoryBackend,
  createMemoryStore,
  type MemoryConfigStore,
} from "../../services/registrar/store/memory-store.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import { DEFAULT_LINES_PER_INTERVAL } from "../../services/runtime/rate-limited-log.js";
import { captureLogger } from "../support/capture-logger.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { recordWatch, type WatchRecorder } from "../support/watch-recorder.js";

const PREFIX = "/aether/v1";
const running: Registrar[] = [];
const watches: WatchRecorder[] = [];
afterEach(async () => {
  await Promise.all(watches.splice(0).map((w) => w.cancel()));
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

/** A projection of `service` whose one route matches a path of `bytes` characters. */
function huge(service: string, bytes: number, version: string): ServiceConfigProjection {
  const [namespace, name] = service.split("/") as [string, string];
  return create(ServiceConfigProjectionSchema, {
    service,
    version,
    routes: [
      {
        kind: RouteKind.HTTP,
        namespace,
        name,
        rules: [
          { matches: [{ path: { type: PathMatchType.PATH_PREFIX, value: "x".repeat(bytes) } }] },
        ],
      },
    ],
  });
}

async function start(store: MemoryConfigStore, logger = captureLogger()) {
  const parsed = parseRegistrarFlags(["--cluster", "hub", "--listen", "127.0.0.1:0"]);
  if (parsed === "help") throw new Error("unexpected --help");
  const registrar = createRegistrar({
    config: parsed as RegistrarConfig,
    store,
    logger: logger.logger,
    processMetrics: false,
  });
  running.push(registrar);
  const address = await registrar.start();
  await registrar.cache.whenSynced();
  const client = createClient(
    ConfigService,
    createConnectTransport({ baseUrl: address.url, httpVersion: "1.1" }),
  );
  return { registrar, client, url: address.url, logger };
}

describe("registrar import bounds", () => {
  it("rejects oversized values as too_large without decoding them, and serves the rest", async () => {
    const backend = createMemoryBackend();
    const hub = createMemoryStore({ origin: "hub", backend });
    const east = createMemoryStore({ origin: "east", backend });
    await hub.put(makeProjection("shop/a", { version: versionAt(1) }));
    await east.put(makeProjection("shop/b", { version: versionAt(2) }));
    const limit = DEFAULT_PROJECTION_LIMITS.maxBytes;
    // A real projection over the limit, and bytes over it that are no projection at all.
    east.putRaw(
      projectionKey(PREFIX, "east", "shop/big"),
      toBinary(ServiceConfigProjectionSchema, {
        ...huge("shop/big", limit, versionAt(7)),
        originCluster: "east",
      }),
    );
    east.putRaw(projectionKey(PREFIX, "east", "shop/junk"), new Uint8Array(limit + 1).fill(0xff));

    const { client, url, registrar } = await start(hub);
    const status = await client.getConfigStatus({});
    expect(status.rejections.map((r) => [r.service, r.originCluster, r.reason])).toEqual([
      ["shop/big", "east", "too_large"],
      ["shop/junk", "east", "too_large"],
    ]);
    expect(status.rejections[0]?.message).toMatch(/at most 262144 are allowed .*not decoded/);
    // The version was read off the value's header, never decoding its routes.
    expect(status.origins.find((o) => o.origin === "east")?.newestVersion).toBe(versionAt(7));
    expect(registrar.store.counters.decodeErrors).toBe(0);

    const all = await client.listAllConfig({ view: ConfigView.ALL_ORIGINS });
    expect(all.projections.map((p) => `${p.service}@${p.originCluster}`)).toEqual([
      "shop/b@east",
      "shop/a@hub",
    ]);
    const filtered = await client.listAllConfig({
      view: ConfigView.ALL_ORIGINS,
      services: ["shop/big", "shop/b"],
    });
    expect(filtered.projections.map((p) => p.service)).toEqual(["shop/b"]);
    const effective = await client.listAllConfig({});
    expect(effective.projections.map((p) => p.service)).toEqual(["shop/a", "shop/b"]);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/^aether_config_import_rejections_total\{reason="too_large"\} 2$/m);
    expect(metrics).toMatch(/^aether_config_import_rejected\{reason="too_large"\} 2$/m);

    // A served projection replaced by an oversized one: a delete in the ALL_ORIGINS view.
    const watch = recordWatch(client, { view: ConfigView.ALL_ORIGINS });
    watches.push(watch);
    await watch.until((e) => e.some((x) => x.type === WatchEventType.SYNCED));
    east.putRaw(
      projectionKey(PREFIX, "east", "shop/b"),
      toBinary(ServiceConfigProjectionSchema, huge("shop/b", limit, versionAt(9))),
    );
    await watch.until((e) => e.some((x) => x.type === WatchEventType.DELETE));
    const deleted = watch.events.find((x) => x.type === WatchEventType.DELETE);
    expect([deleted?.service, deleted?.originCluster]).toEqual(["shop/b", "east"]);
    expect(watch.events.some((x) => x.projection?.service === "shop/big")).toBe(false);
  });

  it("counts twenty thousand junk keys and logs a handful of lines", async () => {
    const logger = captureLogger();
    const store = createMemoryStore({ origin: "hub", logger: logger.logger });
    await store.put(makeProjection("shop/a"));
    const junk = 20_000;
    for (let i = 0; i < junk; i++) {
      store.putRaw(`${PREFIX}/clusters/hub/config/junk-${i}`, Uint8Array.of(1, 2, 3));
    }
    const { client, registrar } = await start(store, logger);
    expect(registrar.store.counters.invalidKeys).toBeGreaterThanOrEqual(junk);
    expect((await client.listAllConfig({})).projections.map((p) => p.service)).toEqual(["shop/a"]);
    const lines = logger.withMessage("skipping a store key that is not a projection key");
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThanOrEqual(DEFAULT_LINES_PER_INTERVAL);
    expect(logger.lines.length).toBeLessThan(50);
  });
});
