import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { connect as connectHttp2 } from "node:http2";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import {
  ConfigService,
  ConfigView,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import {
  createMemoryBackend,
  createMemoryStore,
  type MemoryConfigStore,
} from "../../services/registrar/store/memory-store.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { waitFor } from "../support/wait.js";
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

describe("ConfigService responses in binary and in JSON", () => {
  /** Clients of `url` for the Connect protocol in JSON and in binary, and for gRPC (binary). */
  function clients(url: string) {
    return {
      json: createClient(
        ConfigService,
        createConnectTransport({ baseUrl: url, httpVersion: "1.1" }),
      ),
      binary: createClient(
        ConfigService,
        createConnectTransport({ baseUrl: url, httpVersion: "1.1", useBinaryFormat: true }),
      ),
      grpc: createClient(ConfigService, createGrpcTransport({ baseUrl: url })),
    };
  }

  it("serve the same projections, stamped from the key, whichever the codec", async () => {
    const backend = createMemoryBackend();
    const hub = createMemoryStore({ origin: "hub", backend });
    const spoke = createMemoryStore({ origin: "spoke", backend });
    for (let i = 0; i < 30; i++) {
      await hub.put(makeProjection(`ns/s${i}`, { version: versionAt(i) }));
      if (i % 3 === 0) await spoke.put(makeProjection(`ns/s${i}`, { version: versionAt(100 + i) }));
    }
    hub.putRaw(
      projectionKey("/aether/v1", "hub", "ns/claims"),
      toBinary(ServiceConfigProjectionSchema, makeProjection("ns/claims", { origin: "evil" })),
    );
    hub.putRaw(projectionKey("/aether/v1", "hub", "ns/corrupt"), new Uint8Array([0xff, 0xff]));
    const r = await registrar(["--cluster", "hub"], hub);
    const { json, binary, grpc } = clients(r.url);
    const requests = [
      (c: typeof json) => c.listConfig({ pageSize: 7 }),
      (c: typeof json) => c.listAllConfig({ view: ConfigView.ALL_ORIGINS, pageSize: 1000 }),
      (c: typeof json) => c.listAllConfig({ pageSize: 9 }),
      (c: typeof json) => c.listAllConfig({ services: ["ns/s3", "ns/claims", "ns/corrupt"] }),
    ];
    for (const request of requests) {
      const expected = await request(json);
      expect(expected.projections.length).toBeGreaterThan(0);
      for (const client of [binary, grpc]) {
        const got = await request(client);
        expect(got.projections).toEqual(expected.projections);
        expect(got.revision).toBe(expected.revision);
      }
    }
    const claims = (await request(binary, "ns/claims")).projections[0];
    expect(claims?.originCluster).toBe("hub");

    // A watch: snapshot, then live changes, alike in both codecs.
    const streams = [json, binary, grpc].map((c) => watch(c, { services: ["ns/s3", "ns/new"] }));
    for (const stream of streams) {
      await stream.until((e) => e.some((x) => x.type === WatchEventType.SYNCED));
    }
    await hub.put(makeProjection("ns/new", { version: versionAt(7) }));
    for (const stream of streams) {
      await stream.until((e) => e.some((x) => x.type === WatchEventType.UPSERT));
    }
    const [first, ...others] = streams.map((stream) =>
      stream.events.filter((e) => e.type !== WatchEventType.KEEPALIVE),
    );
    expect(first?.map((e) => e.projection?.service)).toEqual(["ns/s3", undefined, "ns/new"]);
    for (const other of others) expect(other).toEqual(first);
  });

  /** Lists one service's projections over `client`. */
  function request(client: ReturnType<typeof clients>["json"], service: string) {
    return client.listAllConfig({ services: [service], view: ConfigView.ALL_ORIGINS });
  }
});

/** Flags that give registrars one page-token key, so that each takes the others' tokens. */
async function sharedKeyFlags(): Promise<string[]> {
  const keyFile = join(await mkdtemp(join(tmpdir(), "page-token-")), "key");
  await writeFile(keyFile, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600 });
  return ["--page-token-key-file", keyFile];
}

/** Writes `count` projections `ns/sNNNN` under the store's origin, in batches. */
async function fill(store: MemoryConfigStore, count: number): Promise<void> {
  for (let i = 0; i < count; i += 100) {
    await store.write(
      Array.from({ length: Math.min(100, count - i) }, (_, k) => ({
        type: "put" as const,
        projection: makeProjection(`ns/s${String(i + k).padStart(4, "0")}`),
      })),
    );
  }
}

describe("ListConfig and ListAllConfig paging", () => {
  it("serves every page of a listing from the synced cache and what its first page kept; another replica reads the store once per listing (EFFECTIVE) or per five thousand entries (in key order), not once per page", async () => {
    const inner = createMemoryStore({ origin: "hub" });
    const count = 5_100;
    await fill(inner, count);
    const reads: { revision?: number; limit?: number }[] = [];
    const store: MemoryConfigStore = {
      ...inner,
      list: (options) => {
        reads.push({ revision: options?.revision, limit: options?.limit });
        return inner.list(options);
      },
    };
    const keyFlags = await sharedKeyFlags();
    const r = await registrar(["--cluster", "hub", ...keyFlags], store);
    const other = await registrar(["--cluster", "hub", ...keyFlags], store);
    let later = 0; // projections written since the fill
    /**
     * Pages through a listing, its first page on `r` and the rest on `next`;
     * returns how many pages it took and the store reads made after the first.
     */
    const pagesOf = async (
      list: (
        client: TestRegistrar["client"],
        token: string,
      ) => Promise<{ nextPageToken: string; projections: unknown[]; revision: bigint }>,
      next: TestRegistrar,
      before: () => Promise<void> = async () => {},
    ) => {
      reads.length = 0; // the caches' own listings, or the previous listing's reads
      const expected = count + later; // what was written before the first page
      const first = await list(r.client, "");
      expect(reads).toEqual([]);
      await before();
      let token = first.nextPageToken;
      let pages = 1;
      let total = first.projections.length;
      while (token !== "") {
        const page = await list(next.client, token);
        expect(page.revision).toBe(first.revision);
        token = page.nextPageToken;
        total += page.projections.length;
        pages++;
      }
      expect(total).toBe(expected);
      return { pages, total, reads: [...reads], revision: Number(first.revision) };
    };
    const effective = (client: TestRegistrar["client"], pageToken: string) =>
      client.listAllConfig({ pageSize: 1000, pageToken });
    const keyOrdered = [
      (client: TestRegistrar["client"], pageToken: string) =>
        client.listAllConfig({ pageSize: 100, pageToken, view: ConfigView.ALL_ORIGINS }),
      (client: TestRegistrar["client"], pageToken: string) =>
        client.listConfig({ pageSize: 100, pageToken }),
    ];
    // One replica: the cache serves the first page, the listing it kept the rest.
    expect(await pagesOf(effective, r)).toMatchObject({ pages: 6, reads: [] });
    for (const list of keyOrdered) {
      expect(await pagesOf(list, r)).toMatchObject({ pages: 51, reads: [] });
    }
    // Another replica, whose cache moved on since the first page: the store at the token's revision.
    const moveOn = async () => {
      const revision = await inner.put(makeProjection(`ns/later-${later++}`));
      await waitFor(
        () => other.registrar.cache.revision >= revision,
        5_000,
        "the cache to move on",
      );
    };
    const read = await pagesOf(effective, other, moveOn);
    expect(read.pages).toBe(Math.ceil(read.total / 1000));
    expect(read.reads).toEqual([{ revision: read.revision, limit: undefined }]);
    for (const list of keyOrdered) {
      const keyOrder = await pagesOf(list, other, moveOn);
      expect(keyOrder.pages).toBe(Math.ceil(keyOrder.total / 100));
      // Over 5,100 entries by now (written since the fill): pages 2 to 51 (5,000 entries)
      // in one read ahead, the rest in another.
      expect(keyOrder.total).toBeGreaterThan(5_100);
      expect(keyOrder.reads).toEqual([
        { revision: keyOrder.revision, limit: 5000 },
        { revision: keyOrder.revision, limit: 5000 },
      ]);
    }
  });

  it("serves a filtered listing (an agent's poll) from the synced cache, at the cache's revision, without a store read", async () => {
    const inner = createMemoryStore({ origin: "hub" });
    await fill(inner, 300);
    let reads = 0;
    const store: MemoryConfigStore = {
      ...inner,
      list: (options) => {
        reads++;
        return inner.list(options);
      },
    };
    const r = await registrar(["--cluster", "hub"], store);
    await waitFor(async () => (await r.client.getConfigStatus({})).synced, 10_000, "the cache");
    const services = ["ns/s0007", "ns/s0150", "ns/s0299", "ns/absent"];
    reads = 0;
    for (const view of [ConfigView.EFFECTIVE, ConfigView.ALL_ORIGINS]) {
      const page = await r.client.listAllConfig({ services, view });
      expect(page.projections.map((p) => p.service).sort()).toEqual(services.slice(0, 3));
      expect(page.nextPageToken).toBe("");
    }
    const one = await r.client.listConfig({ services: ["ns/s0150"] });
    expect(one.projections.map((p) => p.service)).toEqual(["ns/s0150"]);
    expect(reads).toBe(0);
    // A change is visible to the next listing (the cache follows the store).
    const revision = await inner.put(makeProjection("ns/s0150", { version: versionAt(9) }));
    await waitFor(
      async () => (await r.client.listAllConfig({ services })).revision >= BigInt(revision),
      10_000,
      "the cache to see the write",
    );
    const after = await r.client.listAllConfig({ services: ["ns/s0150"] });
    expect(after.projections[0]?.version).toBe(versionAt(9));
    expect(reads).toBe(0);
    // An unfiltered listing is served from the cache too.
    const all = await r.client.listAllConfig({ pageSize: 1000 });
    expect(all.projections).toHaveLength(300);
    expect(all.revision).toBe(BigInt(r.registrar.cache.revision));
    expect(reads).toBe(0);
  });

  it("serves the pages of a kept listing after their revision was compacted, and OutOfRange where the store must be read", async () => {
    const store = createMemoryStore({ origin: "hub" });
    await fill(store, 5_500);
    const keyFlags = await sharedKeyFlags();
    const r = await registrar(["--cluster", "hub", ...keyFlags], store);
    const other = await registrar(["--cluster", "hub", ...keyFlags], store);
    const list = (client: TestRegistrar["client"], pageToken: string) =>
      client.listAllConfig({ pageSize: 1000, pageToken, view: ConfigView.ALL_ORIGINS });
    const first = await list(r.client, "");
    const revision = await store.put(makeProjection("ns/later"));
    store.backend.compact(store.backend.revision);
    await waitFor(() => other.registrar.cache.revision >= revision, 5_000, "the cache to move on");
    // The first page kept the whole listing: every later page is served from it.
    let token = first.nextPageToken;
    const second = token;
    for (let page = 2; page <= 6; page++) {
      const next = await list(r.client, token);
      expect(next.projections).toHaveLength(page === 6 ? 500 : 1000);
      expect(next.revision).toBe(first.revision);
      token = next.nextPageToken;
    }
    expect(token).toBe("");
    // A replica without that listing, whose cache moved on, must read the compacted revision.
    await expectCode(list(other.client, second), Code.OutOfRange, /compacted/);
  });

  it("pages one revision's resolution, whatever is written meanwhile, and without the kept listing too", async () => {
    const backend = createMemoryBackend();
    const hub = createMemoryStore({ origin: "hub", backend });
    const east = createMemoryStore({ origin: "east", backend });
    for (let i = 0; i < 50; i++) {
      const service = `ns-${i % 3}/svc-${String(i).padStart(2, "0")}`;
      await hub.put(makeProjection(service, { version: versionAt(10 + i) }));
      // east exports every fourth service too, newer than hub half of the time.
      if (i % 4 === 0)
        await east.put(makeProjection(service, { version: versionAt(i % 8 === 0 ? 100 : 1) }));
    }
    // Replicas share the page-token key, so each takes the other's tokens.
    const keyFile = join(await mkdtemp(join(tmpdir(), "page-token-")), "key");
    await writeFile(keyFile, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600 });
    const keyFlags = ["--page-token-key-file", keyFile];
    const first = await registrar(["--cluster", "hub", ...keyFlags], hub);
    const other = await registrar(["--cluster", "hub", ...keyFlags], hub);
    const stranger = await registrar(["--cluster", "hub"], hub);
    const whole = await first.client.listAllConfig({ pageSize: 1000 });
    expect(whole.projections).toHaveLength(50);
    const expected = whole.projections.map((p) => `${p.service}@${p.originCluster}@${p.version}`);
    expect([...expected].sort()).toEqual(expected);
    expect(expected.filter((e) => e.includes("@east@"))).toHaveLength(7);

    const seen: string[] = [];
    const revisions = new Set<bigint>();
    let token = "";
    let pages = 0;
    do {
      // Alternate registrars: the second has not resolved this listing and reads it at the token's revision.
      const client = pages % 2 === 0 ? first.client : other.client;
      const page = await client.listAllConfig({ pageSize: 6, pageToken: token });
      seen.push(...page.projections.map((p) => `${p.service}@${p.originCluster}@${p.version}`));
      revisions.add(page.revision);
      token = page.nextPageToken;
      pages++;
      // Writes during the listing: a new winner, a new service, a deletion.
      if (pages === 2) {
        await east.put(makeProjection("ns-1/svc-01", { version: versionAt(999) }));
        await hub.put(makeProjection("ns-0/aaa-new"));
        await hub.delete("ns-2/svc-47");
      }
    } while (token !== "");
    expect(pages).toBe(Math.ceil(50 / 6));
    expect(seen).toEqual(expected);
    expect(revisions).toEqual(new Set([whole.revision]));

    // A registrar with another key refuses the token: nobody can page at a revision of their choosing.
    const page = await first.client.listAllConfig({ pageSize: 6 });
    await expectCode(
      stranger.client.listAllConfig({ pageSize: 6, pageToken: page.nextPageToken }),
      Code.InvalidArgument,
      /page_token is not a token returned by this service/,
    );
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

  it("ends a stream, and drops its subscription, when its HTTP/2 client vanishes without a word", async () => {
    const store = createMemoryStore({ origin: "hub" });
    await store.put(makeProjection("ns/a"));
    const r = await registrar(["--cluster", "hub"], store);
    // The fleet view follows the cache with one subscription of its own.
    const subscribers = () => r.registrar.cache.stats().subscribers;
    await waitFor(() => subscribers() === 1, 5_000, "the fleet view's subscription");
    // A raw h2c session over a socket of the test's own, to pull from under it.
    const { hostname, port } = new URL(r.url);
    const socket = createConnection({ host: hostname, port: Number(port) });
    const session = connectHttp2(r.url, { createConnection: () => socket });
    session.on("error", () => {});
    const body = Buffer.from(JSON.stringify({ services: ["ns/a"] }));
    const envelope = Buffer.alloc(5 + body.length);
    envelope.writeUInt32BE(body.length, 1);
    body.copy(envelope, 5);
    const stream = session.request({
      ":method": "POST",
      ":path": "/aether.registry.v1.ConfigService/WatchConfig",
      "content-type": "application/connect+json",
    });
    stream.on("error", () => {});
    stream.end(envelope);
    let received = "";
    stream.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1");
    });
    await waitFor(() => received.includes("WATCH_EVENT_TYPE_SYNCED"), 5_000, "SYNCED");
    expect(subscribers()).toBe(2);
    socket.destroy();
    await waitFor(() => subscribers() === 1, 5_000, "the stream's subscription to end");
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
