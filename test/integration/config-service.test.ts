import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigView, WatchEventType } from "../../gen/aether/registry/v1/config_service_pb.js";
import {
  createMemoryBackend,
  createMemoryStore,
  type MemoryConfigStore,
} from "../../services/registrar/store/memory-store.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { recordWatch, type WatchRecorder } from "../support/watch-recorder.js";

const started: TestRegistrar[] = [];
const watches: WatchRecorder[] = [];
afterEach(async () => {
  await Promise.all(watches.splice(0).map((w) => w.cancel()));
  await Promise.all(started.splice(0).map((r) => r.stop()));
});

async function registrar(flags: string[], store?: MemoryConfigStore): Promise<TestRegistrar> {
  const r = await startTestRegistrar(flags, { store });
  started.push(r);
  return r;
}

function watch(...args: Parameters<typeof recordWatch>): WatchRecorder {
  const w = recordWatch(...args);
  watches.push(w);
  return w;
}

async function expectCode(promise: Promise<unknown>, code: Code, message: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  expect(error, "expected the call to fail").toBeInstanceOf(ConnectError);
  expect(Code[(error as ConnectError).code]).toBe(Code[code]);
  expect((error as ConnectError).rawMessage).toMatch(message);
}

describe("ConfigService on the embedded store", () => {
  it("rejects malformed requests with InvalidArgument and a message that says what is wrong", async () => {
    const r = await registrar(["--cluster", "hub"]);
    const c = r.client;
    const cases: [Promise<unknown>, RegExp][] = [
      [c.listConfig({ services: ["no-slash"] }), /must be "namespace\/name"/],
      [c.listConfig({ services: ["Bad/name"] }), /namespace "Bad" is not a DNS-1123 label/],
      [c.listConfig({ pageSize: -1 }), /page_size -1 is negative/],
      [c.listConfig({ pageSize: 5000 }), /larger than the maximum of 1000/],
      [c.listConfig({ pageToken: "%%%garbage" }), /not a token returned by this service/],
      [c.listConfig({ pageToken: "eyJhIjoxfQ" }), /not a token returned by this service/],
      [c.listConfig({ originCluster: "Evil/Origin" }), /origin_cluster: cluster name/],
      [c.listAllConfig({ view: 99 as ConfigView }), /view 99 is not a ConfigView value/],
      [c.listAllConfig({ services: ["a/b/c"] }), /must be "namespace\/name"/],
    ];
    for (const [call, message] of cases) await expectCode(call, Code.InvalidArgument, message);
    const stream = watch(c, { services: ["nope"] });
    expect((await stream.ended)?.code).toBe(Code.InvalidArgument);
    const negative = watch(c, { resumeRevision: -5n });
    expect((await negative.ended)?.rawMessage).toMatch(/resume_revision -5 is negative/);
    // The server keeps serving.
    expect((await c.listConfig({})).projections).toEqual([]);
  });

  it("refuses a page token presented with another query", async () => {
    const store = createMemoryStore({ origin: "hub" });
    for (let i = 0; i < 5; i++) await store.put(makeProjection(`ns/s${i}`));
    const r = await registrar(["--cluster", "hub"], store);
    const first = await r.client.listConfig({ pageSize: 2 });
    expect(first.nextPageToken).not.toBe("");
    await expectCode(
      r.client.listConfig({ pageSize: 2, pageToken: first.nextPageToken, services: ["ns/s1"] }),
      Code.InvalidArgument,
      /belongs to a different query/,
    );
    await expectCode(
      r.client.listAllConfig({ pageSize: 2, pageToken: first.nextPageToken }),
      Code.InvalidArgument,
      /belongs to a different query/,
    );
  });

  it("paginates 2,500 projections with no duplicates and no gaps, at one revision", async () => {
    const store = createMemoryStore({ origin: "hub" });
    const expected = new Set<string>();
    for (let i = 0; i < 2500; i++) {
      const service = `ns-${i % 7}/svc-${i}`;
      expected.add(service);
      await store.put(makeProjection(service));
    }
    const r = await registrar(["--cluster", "hub"], store);
    for (const [name, list] of [
      ["ListConfig", (token: string) => r.client.listConfig({ pageSize: 333, pageToken: token })],
      [
        "ListAllConfig ALL_ORIGINS",
        (token: string) =>
          r.client.listAllConfig({ pageSize: 333, pageToken: token, view: ConfigView.ALL_ORIGINS }),
      ],
      [
        "ListAllConfig EFFECTIVE",
        (token: string) => r.client.listAllConfig({ pageSize: 333, pageToken: token }),
      ],
    ] as const) {
      const seen: string[] = [];
      const revisions = new Set<bigint>();
      let token = "";
      let pages = 0;
      do {
        const page = await list(token);
        seen.push(...page.projections.map((p) => p.service));
        revisions.add(page.revision);
        token = page.nextPageToken;
        pages++;
        // A write in the middle of the listing must not show up in it.
        if (pages === 2) await store.put(makeProjection("ns-0/added-mid-listing"));
      } while (token !== "");
      expect(pages, name).toBe(Math.ceil(2500 / 333));
      expect(seen.length, name).toBe(2500);
      expect(new Set(seen), name).toEqual(expected);
      expect(revisions.size, name).toBe(1);
      await store.delete("ns-0/added-mid-listing");
    }
  });

  it("stamps the origin from the key, lists one origin, and resolves the effective view", async () => {
    const backend = createMemoryBackend();
    const hub = createMemoryStore({ origin: "hub", backend });
    const spoke = createMemoryStore({ origin: "spoke", backend });
    await hub.put(makeProjection("shop/cart", { version: versionAt(1), backend: "shop/cart-hub" }));
    await spoke.put(
      makeProjection("shop/cart", { version: versionAt(2), backend: "shop/cart-spoke" }),
    );
    await spoke.put(makeProjection("shop/only-spoke"));
    // A value under hub's prefix that claims to come from "evil".
    hub.putRaw(
      projectionKey("/aether/v1", "hub", "shop/claims"),
      (await import("@bufbuild/protobuf")).toBinary(
        (await import("../../gen/aether/registry/v1/projection_pb.js"))
          .ServiceConfigProjectionSchema,
        makeProjection("shop/claims", { origin: "evil" }),
      ),
    );

    const federated = await registrar(["--cluster", "hub"], hub);
    const own = await federated.client.listConfig({});
    expect(own.projections.map((p) => [p.service, p.originCluster])).toEqual([
      ["shop/cart", "hub"],
      ["shop/claims", "hub"],
    ]);
    const spokes = await federated.client.listConfig({ originCluster: "spoke" });
    expect(spokes.projections.map((p) => p.originCluster)).toEqual(["spoke", "spoke"]);
    const all = await federated.client.listAllConfig({ view: ConfigView.ALL_ORIGINS });
    expect(all.projections).toHaveLength(4);
    const effective = await federated.client.listAllConfig({});
    expect(effective.projections.map((p) => `${p.service}@${p.originCluster}`)).toEqual([
      "shop/cart@spoke",
      "shop/claims@hub",
      "shop/only-spoke@spoke",
    ]);

    const controlled = await registrar(["--cluster", "spoke", "--control-cluster", "hub"], spoke);
    const hubOnly = await controlled.client.listAllConfig({ view: ConfigView.EFFECTIVE });
    expect(hubOnly.projections.map((p) => `${p.service}@${p.originCluster}`)).toEqual([
      "shop/cart@hub",
      "shop/claims@hub",
    ]);
    const metrics = await (await fetch(`${controlled.url}/metrics`)).text();
    expect(metrics).toMatch(/aether_config_import_rejected\{reason="untrusted_origin"\} 2/);
    expect(metrics).toMatch(/aether_config_import_rejections_total\{reason="untrusted_origin"\} 2/);
    expect(metrics).toMatch(/aether_config_store_restamped_total [1-9]/);
  });
});

describe("GetConfigStatus on the embedded store", () => {
  it("reports origins, import rejections, conflicts and that export is off", async () => {
    const backend = createMemoryBackend();
    const hub = createMemoryStore({ origin: "hub", backend });
    const east = createMemoryStore({ origin: "east", backend });
    await hub.put(makeProjection("shop/cart", { version: versionAt(1) }));
    await hub.put(makeProjection("shop/pay", { version: versionAt(3) }));
    await east.put(makeProjection("shop/cart", { version: versionAt(2) }));

    const federated = await registrar(["--cluster", "hub"], hub);
    const status = await federated.client.getConfigStatus({});
    expect(status.cluster).toBe("hub");
    expect(status.controlCluster).toBe("");
    expect(status.synced).toBe(true);
    expect(
      status.origins.map((o) => [
        o.origin,
        o.projections,
        o.oldestVersion,
        o.newestVersion,
        o.trusted,
      ]),
    ).toEqual([
      ["east", 1, versionAt(2), versionAt(2), true],
      ["hub", 2, versionAt(1), versionAt(3), true],
    ]);
    expect(status.conflicts.map((c) => [c.service, c.winnerOrigin, c.loserOrigins])).toEqual([
      ["shop/cart", "east", ["hub"]],
    ]);
    expect(status.rejections).toEqual([]);
    expect(status.export?.enabled).toBe(false);

    const controlled = await registrar(["--cluster", "spoke", "--control-cluster", "hub"], east);
    const spokeView = await controlled.client.getConfigStatus({});
    expect(spokeView.controlCluster).toBe("hub");
    expect(spokeView.origins.find((o) => o.origin === "east")?.trusted).toBe(false);
    expect(spokeView.conflicts).toEqual([]);
    expect(spokeView.rejections.map((r) => [r.service, r.originCluster, r.reason])).toEqual([
      ["shop/cart", "east", "untrusted_origin"],
    ]);
  });
});

describe("WatchConfig on the embedded store", () => {
  it("sends a snapshot, SYNCED, then upserts and deletes of the watched services only", async () => {
    const store = createMemoryStore({ origin: "hub" });
    await store.put(makeProjection("shop/a"));
    await store.put(makeProjection("shop/b"));
    const r = await registrar(["--cluster", "hub"], store);
    const w = watch(r.client, { services: ["shop/a", "shop/c"] });
    await w.until((e) => e.some((x) => x.type === WatchEventType.SYNCED));
    expect(w.events.map((e) => [WatchEventType[e.type], e.service, e.originCluster])).toEqual([
      ["SNAPSHOT", "shop/a", "hub"],
      ["SYNCED", "", ""],
    ]);
    expect(w.events[1]?.resumed).toBe(false);
    const syncedRevision = w.events[1]?.revision as bigint;

    await store.put(makeProjection("shop/b", { version: versionAt(5) })); // not watched
    await store.put(makeProjection("shop/c", { version: versionAt(5) }));
    await store.delete("shop/a");
    await w.until((e) => e.length >= 4);
    expect(w.events.slice(2).map((e) => [WatchEventType[e.type], e.service])).toEqual([
      ["UPSERT", "shop/c"],
      ["DELETE", "shop/a"],
    ]);
    expect(w.events[2]?.projection?.version).toBe(versionAt(5));
    expect(w.events[2]?.revision).toBeGreaterThan(syncedRevision);
    expect(w.events[3]?.revision).toBeGreaterThan(w.events[2]?.revision as bigint);

    // Resuming from the SYNCED revision replays exactly the two changes.
    const resumed = watch(r.client, {
      services: ["shop/a", "shop/c"],
      resumeRevision: syncedRevision,
    });
    await resumed.until((e) => e.some((x) => x.type === WatchEventType.SYNCED));
    expect(resumed.events.map((e) => [WatchEventType[e.type], e.service])).toEqual([
      ["UPSERT", "shop/c"],
      ["DELETE", "shop/a"],
      ["SYNCED", ""],
    ]);
    expect(resumed.events[2]?.resumed).toBe(true);

    // A resume point the registrar never saw (from the future) falls back to a snapshot.
    const future = watch(r.client, { services: ["shop/c"], resumeRevision: 1_000_000n });
    await future.until((e) => e.some((x) => x.type === WatchEventType.SYNCED));
    expect(future.events.map((e) => WatchEventType[e.type])).toEqual(["SNAPSHOT", "SYNCED"]);
    expect(future.events[1]?.resumed).toBe(false);
  });

  it("follows the effective winner when a newer origin appears and disappears", async () => {
    const backend = createMemoryBackend();
    const hub = createMemoryStore({ origin: "hub", backend });
    const east = createMemoryStore({ origin: "east", backend });
    await hub.put(makeProjection("shop/cart", { version: versionAt(1) }));
    const r = await registrar(["--cluster", "hub"], hub);
    const effective = watch(r.client, {});
    const all = watch(r.client, { view: ConfigView.ALL_ORIGINS });
    await effective.until((e) => e.some((x) => x.type === WatchEventType.SYNCED));
    await all.until((e) => e.some((x) => x.type === WatchEventType.SYNCED));

    await east.put(makeProjection("shop/cart", { version: versionAt(2) }));
    await east.delete("shop/cart");
    await effective.until((e) => e.length >= 4);
    expect(effective.events.map((e) => `${WatchEventType[e.type]}:${e.originCluster}`)).toEqual([
      "SNAPSHOT:hub",
      "SYNCED:",
      "UPSERT:east",
      "UPSERT:hub",
    ]);
    await all.until((e) => e.length >= 4);
    expect(all.events.map((e) => `${WatchEventType[e.type]}:${e.originCluster}`)).toEqual([
      "SNAPSHOT:hub",
      "SYNCED:",
      "UPSERT:east",
      "DELETE:east",
    ]);
  });

  it("sends keep-alives on an idle stream", async () => {
    const r = await registrar(["--cluster", "hub", "--keepalive", "100ms"]);
    const w = watch(r.client, {});
    await w.until((e) => e.filter((x) => x.type === WatchEventType.KEEPALIVE).length >= 3, 5_000);
    expect(w.events[0]?.type).toBe(WatchEventType.SYNCED);
  });

  it("ends open streams cleanly (OK) when the registrar drains", async () => {
    const store = createMemoryStore({ origin: "hub" });
    await store.put(makeProjection("shop/a"));
    const r = await startTestRegistrar(["--cluster", "hub"], { store });
    const w = recordWatch(r.client, {});
    await w.until((e) => e.some((x) => x.type === WatchEventType.SYNCED));
    const stopping = r.stop();
    expect(await w.ended).toBeUndefined();
    await stopping;
    expect(r.registrar.cache.stats().subscribers).toBe(0);
  });
});
