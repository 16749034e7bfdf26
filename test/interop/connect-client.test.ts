/**
 * The generated Connect client (connect-es) against `aether-registrar` running
 * as a real OS process, over every transport the registrar serves on its one
 * port: Connect over HTTP/1.1 (binary POST and JSON GET) and h2c, gRPC over
 * h2c, and gRPC-Web over HTTP/1.1.
 */
import {
  fromBinary,
  fromJson,
  type JsonObject,
  type MessageInitShape,
  toBinary,
  toJson,
} from "@bufbuild/protobuf";
import { type Client, Code, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { Etcd3 } from "etcd3";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  ConfigService,
  ConfigView,
  ListAllConfigRequestSchema,
  ListConfigRequestSchema,
  type WatchConfigRequestSchema,
  type WatchConfigResponse,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { DEFAULT_STORE_PREFIX, projectionKey } from "../../services/registrar/store/store-key.js";
import { connectErrorOf } from "../support/connect-error-of.js";
import { type EtcdHandle, startEtcd } from "../support/etcd.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";
import {
  grpcProjection,
  httpProjection,
  removeSeedFiles,
  stamped,
  startSeededRegistrar,
} from "./fixtures.js";

type ConfigClient = Client<typeof ConfigService>;

interface TransportCase {
  readonly name: string;
  /** A DNS-1123 label unique to the transport, used as the namespace of the services it writes. */
  readonly slug: string;
  readonly open: (baseUrl: string) => { transport: Transport; close: () => void };
}

const TRANSPORTS: readonly TransportCase[] = [
  {
    name: "Connect (binary) over HTTP/1.1",
    slug: "connect-h1",
    open: (baseUrl) => ({
      transport: createConnectTransport({ baseUrl, httpVersion: "1.1" }),
      close: () => undefined,
    }),
  },
  {
    name: "Connect (JSON, unary calls as GET) over HTTP/1.1",
    slug: "connect-get",
    open: (baseUrl) => ({
      transport: createConnectTransport({
        baseUrl,
        httpVersion: "1.1",
        useBinaryFormat: false,
        useHttpGet: true,
      }),
      close: () => undefined,
    }),
  },
  {
    name: "Connect (binary) over HTTP/2 (h2c)",
    slug: "connect-h2",
    open: (baseUrl) => {
      const sessionManager = new Http2SessionManager(baseUrl);
      return {
        transport: createConnectTransport({ baseUrl, httpVersion: "2", sessionManager }),
        close: () => sessionManager.abort(),
      };
    },
  },
  {
    name: "gRPC over h2c",
    slug: "grpc",
    open: (baseUrl) => {
      const sessionManager = new Http2SessionManager(baseUrl);
      return {
        transport: createGrpcTransport({ baseUrl, sessionManager }),
        close: () => sessionManager.abort(),
      };
    },
  },
  {
    name: "gRPC-Web over HTTP/1.1",
    slug: "grpc-web",
    open: (baseUrl) => ({
      transport: createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
      close: () => undefined,
    }),
  },
];

const T1 = "2026-11-29T12:00:00.000000000Z";
const T2 = "2026-11-29T13:00:00.000000000Z";

const asJson = (projection: ServiceConfigProjection | undefined): JsonObject =>
  toJson(ServiceConfigProjectionSchema, projection as ServiceConfigProjection) as JsonObject;

const keyOf = (p: { service: string; originCluster: string }) => `${p.service}@${p.originCluster}`;

/** A WatchConfig stream consumed in the background; its events are recorded as they arrive. */
interface RecordedWatch {
  readonly events: WatchConfigResponse[];
  /** The events other than KEEPALIVE. */
  significant(): WatchConfigResponse[];
  /** Resolves once an event satisfies `match`; fails early when the stream failed. */
  until(match: (event: WatchConfigResponse) => boolean, what: string): Promise<WatchConfigResponse>;
  /** Cancels the stream and waits for the consumer to finish. */
  close(): Promise<void>;
}

const openWatches = new Set<RecordedWatch>();

function recordWatch(
  client: ConfigClient,
  request: MessageInitShape<typeof WatchConfigRequestSchema>,
): RecordedWatch {
  const controller = new AbortController();
  const events: WatchConfigResponse[] = [];
  let failure: unknown;
  const consumer = (async () => {
    try {
      for await (const event of client.watchConfig(request, { signal: controller.signal })) {
        events.push(event);
      }
      failure = new Error("the stream ended");
    } catch (error) {
      if (!controller.signal.aborted) failure = error;
    }
  })();
  const recorded: RecordedWatch = {
    events,
    significant: () => events.filter((e) => e.type !== WatchEventType.KEEPALIVE),
    async until(match, what) {
      let found: WatchConfigResponse | undefined;
      await waitFor(
        () => {
          found = events.find(match);
          if (found === undefined && failure !== undefined) throw failure;
          return found !== undefined;
        },
        10_000,
        what,
      );
      return found as WatchConfigResponse;
    },
    async close() {
      openWatches.delete(recorded);
      controller.abort();
      await consumer;
    },
  };
  openWatches.add(recorded);
  return recorded;
}

const isSynced = (event: WatchConfigResponse) => event.type === WatchEventType.SYNCED;

afterEach(async () => {
  await Promise.all([...openWatches].map((watch) => watch.close()));
});

afterAll(async () => {
  await stopAllRegistrars();
  await removeSeedFiles();
});

describe("generated Connect client against a registrar process with the memory store", () => {
  const CLUSTER = "east";
  const SEED: JsonObject[] = [
    // The seed claims another origin: the registrar must stamp its own.
    httpProjection("shop/checkout", T1, "spoofed"),
    grpcProjection("payments/ledger", T1),
    httpProjection("shop/cart", T1),
    httpProjection("web/frontend", T1),
    httpProjection("search/api", T1),
  ];
  const EXPECTED = new Map(
    SEED.map((p) => [String(p.service), stamped(p, CLUSTER)] as [string, JsonObject]),
  );
  const ALL_SERVICES = [...EXPECTED.keys()].sort();
  let registrar: RegistrarProcess;

  beforeAll(async () => {
    // Debug level: the registrar then logs every HTTP request (method and URL).
    registrar = await startSeededRegistrar(CLUSTER, SEED, ["--log-level", "debug"]);
  });

  describe.each(TRANSPORTS)("over $name", (transportCase) => {
    let client: ConfigClient;
    let close: () => void = () => undefined;

    beforeAll(() => {
      const opened = transportCase.open(registrar.url);
      close = opened.close;
      client = createClient(ConfigService, opened.transport);
    });
    afterAll(() => close());

    it("ListConfig returns every projection of the registrar's own cluster, stamped with that cluster", async () => {
      const response = await client.listConfig({});
      expect(response.revision).toBeGreaterThan(0n);
      expect(response.nextPageToken).toBe("");
      expect(response.projections.map((p) => p.service).sort()).toEqual(ALL_SERVICES);
      for (const projection of response.projections) {
        expect(projection.originCluster).toBe(CLUSTER);
        expect(asJson(projection)).toEqual(EXPECTED.get(projection.service));
      }
    });

    it("ListConfig pages with page_size and next_page_token, every page read at the same revision", async () => {
      const pages = [];
      let pageToken = "";
      do {
        const page = await client.listConfig({ pageSize: 2, pageToken });
        pages.push(page);
        pageToken = page.nextPageToken;
      } while (pageToken !== "" && pages.length < 10);
      expect(pages.map((page) => page.projections.length)).toEqual([2, 2, 1]);
      expect(pages.map((page) => page.nextPageToken !== "")).toEqual([true, true, false]);
      expect(new Set(pages.map((page) => page.revision)).size).toBe(1);
      expect(pages[0]?.revision).toBeGreaterThan(0n);
      const services = pages.flatMap((page) => page.projections.map((p) => p.service));
      expect(services.sort()).toEqual(ALL_SERVICES);
    });

    it("ListConfig filtered by services returns only the named services that exist", async () => {
      const response = await client.listConfig({
        services: ["payments/ledger", "shop/cart", "absent/service"],
      });
      expect(response.projections.map((p) => p.service).sort()).toEqual([
        "payments/ledger",
        "shop/cart",
      ]);
      expect(asJson(response.projections.find((p) => p.service === "payments/ledger"))).toEqual(
        EXPECTED.get("payments/ledger"),
      );
    });

    it("ListConfig of an origin with no projections returns an empty page at the current revision", async () => {
      const response = await client.listConfig({ originCluster: "nowhere" });
      expect(response.projections).toEqual([]);
      expect(response.nextPageToken).toBe("");
      expect(response.revision).toBeGreaterThan(0n);
    });

    it("ListAllConfig returns the one origin's projections in both views, the EFFECTIVE view ordered by service", async () => {
      const effective = await client.listAllConfig({ view: ConfigView.EFFECTIVE });
      const unspecified = await client.listAllConfig({});
      const allOrigins = await client.listAllConfig({ view: ConfigView.ALL_ORIGINS });
      expect(effective.projections.map((p) => p.service)).toEqual(ALL_SERVICES);
      expect(unspecified.projections.map(asJson)).toEqual(effective.projections.map(asJson));
      expect(allOrigins.projections.map((p) => p.service).sort()).toEqual(ALL_SERVICES);
      for (const response of [effective, allOrigins]) {
        expect(response.revision).toBeGreaterThan(0n);
        expect(response.nextPageToken).toBe("");
        for (const projection of response.projections) {
          expect(asJson(projection)).toEqual(EXPECTED.get(projection.service));
        }
      }
    });

    it("ListAllConfig pages both views with next_page_token until every projection was returned once", async () => {
      for (const view of [ConfigView.EFFECTIVE, ConfigView.ALL_ORIGINS]) {
        const services: string[] = [];
        const tokens: string[] = [];
        const revisions = new Set<bigint>();
        let pageToken = "";
        do {
          const page = await client.listAllConfig({ view, pageSize: 3, pageToken });
          services.push(...page.projections.map((p) => p.service));
          revisions.add(page.revision);
          pageToken = page.nextPageToken;
          tokens.push(pageToken);
        } while (pageToken !== "" && tokens.length < 10);
        expect(tokens.map((token) => token !== "")).toEqual([true, false]);
        expect(revisions.size).toBe(1);
        expect(services.sort()).toEqual(ALL_SERVICES);
      }
    });

    it.each([
      {
        what: "a service that is not namespace/name",
        call: (c: ConfigClient) => c.listConfig({ services: ["Bad Name"] }),
        message: /service "Bad Name" must be "namespace\/name"/,
      },
      {
        what: "a negative page_size",
        call: (c: ConfigClient) => c.listAllConfig({ pageSize: -1 }),
        message: /page_size -1 is negative/,
      },
      {
        what: "a page_size above 1000",
        call: (c: ConfigClient) => c.listConfig({ pageSize: 5000 }),
        message: /page_size 5000 is larger than the maximum of 1000/,
      },
      {
        what: "a garbage page_token",
        call: (c: ConfigClient) => c.listAllConfig({ pageToken: "not-a-token" }),
        message: /page_token is not a token returned by this service/,
      },
      {
        what: "an origin_cluster that is not a DNS-1123 label",
        call: (c: ConfigClient) => c.listConfig({ originCluster: "Bad_Origin" }),
        message: /origin_cluster: cluster name "Bad_Origin" is not a DNS-1123 label/,
      },
      {
        what: "a negative resume_revision",
        call: async (c: ConfigClient) => {
          for await (const _ of c.watchConfig({ resumeRevision: -1n })) break;
        },
        message: /resume_revision -1 is negative/,
      },
    ])(
      "rejects $what with InvalidArgument and a message naming the problem",
      async ({ call, message }) => {
        const error = await connectErrorOf(() => call(client));
        expect(Code[error.code]).toBe(Code[Code.InvalidArgument]);
        expect(error.rawMessage).toMatch(message);
        // The server still answers.
        expect((await client.listConfig({ pageSize: 1 })).projections).toHaveLength(1);
      },
    );

    it("rejects a page_token of another query with InvalidArgument", async () => {
      const first = await client.listConfig({ pageSize: 1 });
      expect(first.nextPageToken).not.toBe("");
      const error = await connectErrorOf(() =>
        client.listConfig({ pageSize: 1, pageToken: first.nextPageToken, services: ["shop/cart"] }),
      );
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toMatch(/page_token belongs to a different query/);
    });
  });

  it("a Connect transport with useHttpGet sends ListConfig and ListAllConfig as HTTP GET requests with a base64 binary message", async () => {
    const client = createClient(
      ConfigService,
      createConnectTransport({ baseUrl: registrar.url, httpVersion: "1.1", useHttpGet: true }),
    );
    const probe = "get-probe/listed";
    await client.listConfig({ services: [probe] });
    await client.listAllConfig({ services: [probe] });
    const requests = [
      { method: "ListConfig", schema: ListConfigRequestSchema },
      { method: "ListAllConfig", schema: ListAllConfigRequestSchema },
    ] as const;
    for (const { method, schema } of requests) {
      const line = await registrar.waitForLog((l) => {
        if (l.msg !== "request" || typeof l.url !== "string") return false;
        const url = new URL(l.url, registrar.url);
        if (url.pathname !== `/${ConfigService.typeName}/${method}`) return false;
        if (url.searchParams.get("encoding") !== "proto") return false;
        const message = Buffer.from(url.searchParams.get("message") ?? "", "base64url");
        try {
          return fromBinary(schema, message).services.includes(probe);
        } catch {
          return false; // not this request (the matcher runs in the log reader: never throw)
        }
      }, 5_000);
      expect(line).toMatchObject({ method: "GET", status: 200, httpVersion: "1.1" });
      const query = new URL(String(line.url), registrar.url).searchParams;
      expect(query.get("encoding")).toBe("proto");
      expect(query.get("base64")).toBe("1");
    }
  });
});

describe("generated Connect client against registrar processes sharing etcd", () => {
  const EAST_SEED = [httpProjection("shop/checkout", T1), grpcProjection("payments/ledger", T1)];
  const WEST_SEED = [httpProjection("shop/checkout", T2), httpProjection("search/api", T1)];
  const SEEDED = ["payments/ledger", "search/api", "shop/checkout"];
  let etcd: EtcdHandle | undefined;
  let etcdClient: Etcd3 | undefined;
  let east: RegistrarProcess;

  beforeAll(async () => {
    etcd = await startEtcd();
    etcdClient = new Etcd3({ hosts: etcd.endpoint });
    const storeArgs = ["--store", "etcd", "--etcd-endpoints", etcd.endpoint];
    [east] = await Promise.all([
      startSeededRegistrar("east", EAST_SEED, [...storeArgs, "--keepalive", "300ms"]),
      startSeededRegistrar("west", WEST_SEED, storeArgs),
    ]);
    // Watch streams are served from east's cache: wait until it has seen west's writes.
    const transport = createConnectTransport({ baseUrl: east.url, httpVersion: "1.1" });
    const client = createClient(ConfigService, transport);
    await waitFor(
      async () => {
        const watch = recordWatch(client, { view: ConfigView.ALL_ORIGINS, services: SEEDED });
        try {
          const synced = await watch.until(isSynced, "SYNCED");
          return watch.events.indexOf(synced) === EAST_SEED.length + WEST_SEED.length;
        } finally {
          await watch.close();
        }
      },
      10_000,
      "east's cache to hold both origins' projections",
    );
  });

  afterAll(async () => {
    etcdClient?.close();
    await stopAllRegistrars();
    await etcd?.stop();
  });

  /** Writes `projection` under `origin`'s key, as that origin's registrar would; returns the revision. */
  async function putProjection(origin: string, projection: JsonObject): Promise<bigint> {
    const message = fromJson(ServiceConfigProjectionSchema, projection);
    const response = await (etcdClient as Etcd3)
      .put(projectionKey(DEFAULT_STORE_PREFIX, origin, message.service))
      .value(Buffer.from(toBinary(ServiceConfigProjectionSchema, message)))
      .exec();
    return BigInt(response.header.revision);
  }

  /** Deletes `origin`'s projection of `service`; returns the revision of the delete. */
  async function deleteProjection(origin: string, service: string): Promise<bigint> {
    const response = await (etcdClient as Etcd3)
      .delete()
      .key(projectionKey(DEFAULT_STORE_PREFIX, origin, service))
      .exec();
    expect(response.deleted).toBe("1");
    return BigInt(response.header.revision);
  }

  describe.each(TRANSPORTS)("over $name", (transportCase) => {
    let client: ConfigClient;
    let close: () => void = () => undefined;

    beforeAll(() => {
      const opened = transportCase.open(east.url);
      close = opened.close;
      client = createClient(ConfigService, opened.transport);
    });
    afterAll(() => close());

    it("ListAllConfig lists every origin's projection in ALL_ORIGINS, and only the newest per service in EFFECTIVE", async () => {
      const all = await client.listAllConfig({ view: ConfigView.ALL_ORIGINS, services: SEEDED });
      expect(all.revision).toBeGreaterThan(0n);
      expect(all.projections.map(keyOf).sort()).toEqual([
        "payments/ledger@east",
        "search/api@west",
        "shop/checkout@east",
        "shop/checkout@west",
      ]);
      for (const projection of all.projections) {
        const seed = (projection.originCluster === "east" ? EAST_SEED : WEST_SEED).find(
          (p) => p.service === projection.service,
        ) as JsonObject;
        expect(asJson(projection)).toEqual(stamped(seed, projection.originCluster));
      }

      const effective = await client.listAllConfig({
        view: ConfigView.EFFECTIVE,
        services: SEEDED,
      });
      expect(effective.revision).toBeGreaterThan(0n);
      expect(effective.projections.map(keyOf)).toEqual([
        "payments/ledger@east",
        "search/api@west",
        "shop/checkout@west",
      ]);
      expect(effective.projections[2]?.version).toBe(T2);
    });

    it("ListConfig with origin_cluster lists another origin's projections, stamped with that origin", async () => {
      const west = await client.listConfig({ originCluster: "west", services: SEEDED });
      expect(west.projections.map(keyOf).sort()).toEqual(["search/api@west", "shop/checkout@west"]);
      const own = await client.listConfig({ services: SEEDED });
      expect(own.projections.map(keyOf).sort()).toEqual([
        "payments/ledger@east",
        "shop/checkout@east",
      ]);
      expect(own.revision).toBe(west.revision);
    });

    it("WatchConfig sends the snapshot, SYNCED (resumed=false), then live UPSERT and DELETE events of the watched services only", async () => {
      const live = `${transportCase.slug}/live`;
      const unwatched = `${transportCase.slug}/unwatched`;
      const watch = recordWatch(client, {
        view: ConfigView.ALL_ORIGINS,
        services: ["shop/checkout", live],
      });
      const synced = await watch.until(isSynced, "SYNCED");
      expect(synced.resumed).toBe(false);
      expect(synced.revision).toBeGreaterThan(0n);
      const snapshot = watch.events.slice(0, watch.events.indexOf(synced));
      expect(snapshot.map((e) => WatchEventType[e.type])).toEqual(["SNAPSHOT", "SNAPSHOT"]);
      expect(snapshot.map((e) => `${e.service}@${e.originCluster}`)).toEqual([
        "shop/checkout@east",
        "shop/checkout@west",
      ]);
      for (const event of snapshot) {
        expect(event.revision).toBe(synced.revision);
        expect(event.projection?.originCluster).toBe(event.originCluster);
        expect(asJson(event.projection)).toEqual(
          stamped(
            event.originCluster === "east"
              ? (EAST_SEED[0] as JsonObject)
              : (WEST_SEED[0] as JsonObject),
            event.originCluster,
          ),
        );
      }

      // A change to a service nobody watches first, then one to a watched service;
      // the value claims another origin, which the key path overrides.
      await putProjection("west", httpProjection(unwatched, T1));
      const written = httpProjection(live, T2, "liar");
      const putRevision = await putProjection("west", written);
      const upsert = await watch.until((e) => e.type === WatchEventType.UPSERT, "UPSERT");
      expect(upsert.service).toBe(live);
      expect(upsert.originCluster).toBe("west");
      expect(upsert.revision).toBe(putRevision);
      expect(upsert.revision).toBeGreaterThan(synced.revision);
      expect(asJson(upsert.projection)).toEqual(stamped(written, "west"));

      const deleteRevision = await deleteProjection("west", live);
      const deleted = await watch.until((e) => e.type === WatchEventType.DELETE, "DELETE");
      expect(deleted).toMatchObject({ service: live, originCluster: "west" });
      expect(deleted.revision).toBe(deleteRevision);
      expect(deleted.projection).toBeUndefined();
      expect(watch.significant().map((e) => WatchEventType[e.type])).toEqual([
        "SNAPSHOT",
        "SNAPSHOT",
        "SYNCED",
        "UPSERT",
        "DELETE",
      ]);
      await deleteProjection("west", unwatched);
    });

    it("WatchConfig resumed from the SYNCED revision sends SYNCED (resumed=true) without a snapshot, then later changes; resumed again it replays them", async () => {
      const service = `${transportCase.slug}/resume`;
      const first = recordWatch(client, { services: [service] });
      const firstSynced = await first.until(isSynced, "SYNCED");
      expect(first.events.indexOf(firstSynced)).toBe(0); // nothing to snapshot yet
      expect(firstSynced.resumed).toBe(false);
      await first.close();
      const resumeRevision = firstSynced.revision;

      const resumed = recordWatch(client, { services: [service], resumeRevision });
      const resumedSynced = await resumed.until(isSynced, "SYNCED");
      expect(resumed.events.indexOf(resumedSynced)).toBe(0);
      expect(resumedSynced.resumed).toBe(true);
      expect(resumedSynced.revision).toBeGreaterThanOrEqual(resumeRevision);

      const written = httpProjection(service, T1);
      const putRevision = await putProjection("east", written);
      const upsert = await resumed.until((e) => e.type === WatchEventType.UPSERT, "UPSERT");
      expect(upsert).toMatchObject({ service, originCluster: "east", revision: putRevision });
      expect(upsert.revision).toBeGreaterThan(resumeRevision);
      expect(asJson(upsert.projection)).toEqual(stamped(written, "east"));
      const deleteRevision = await deleteProjection("east", service);
      const deleted = await resumed.until((e) => e.type === WatchEventType.DELETE, "DELETE");
      // EFFECTIVE view: the last trusted origin's projection is gone.
      expect(deleted).toMatchObject({ service, originCluster: "east", revision: deleteRevision });
      await resumed.close();

      // Resuming from the same revision again replays both changes, then SYNCED.
      const replay = recordWatch(client, { services: [service], resumeRevision });
      const replaySynced = await replay.until(isSynced, "SYNCED");
      expect(replaySynced.resumed).toBe(true);
      expect(replaySynced.revision).toBeGreaterThanOrEqual(deleteRevision);
      expect(
        replay.events
          .slice(0, replay.events.indexOf(replaySynced))
          .map((e) => [WatchEventType[e.type], e.service, e.originCluster, e.revision]),
      ).toEqual([
        ["UPSERT", service, "east", putRevision],
        ["DELETE", service, "east", deleteRevision],
      ]);
    });

    it("an idle WatchConfig stream receives KEEPALIVE events carrying the current revision", async () => {
      const watch = recordWatch(client, { services: [`${transportCase.slug}/idle`] });
      const synced = await watch.until(isSynced, "SYNCED");
      const keepalive = await watch.until((e) => e.type === WatchEventType.KEEPALIVE, "KEEPALIVE");
      expect(keepalive.revision).toBeGreaterThanOrEqual(synced.revision);
      expect(keepalive.service).toBe("");
      expect(keepalive.projection).toBeUndefined();
    });
  });
});
