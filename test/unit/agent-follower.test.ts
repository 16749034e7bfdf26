/**
 * The config follower's state machine against a fake ConfigService client:
 * snapshots applied only when complete, resume, rejections, garbage,
 * keep-alive timeouts, the poll fallback, dependency-set changes and poll mode.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import {
  type ConfigFollower,
  type ConfigFollowerOptions,
  createConfigFollower,
  createReconnectBackoff,
  type FollowerClient,
  type FollowerUpdate,
} from "../../clients/agent/follower/config-follower.js";
import type { ReceivedRejection } from "../../clients/agent/follower/received-projection.js";
import {
  ConfigView,
  type ListAllConfigRequest,
  type ListAllConfigResponse,
  ListAllConfigResponseSchema,
  type WatchConfigRequest,
  type WatchConfigResponse,
  WatchConfigResponseSchema,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import type { Route, ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import { createImportPolicy } from "../../services/common/import-policy.js";
import { NO_ORIGIN_KEYS, type OriginKeys } from "../../services/signing/origin-keys.js";
import { createOriginKeysCheck } from "../../services/signing/origin-keys-source.js";
import type { SigningKey } from "../../services/signing/signing-key.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { newSigningKey, originKeysOf, signedProjection } from "../support/signing-keys.js";
import { waitFor } from "../support/wait.js";

/** One WatchConfig call of the fake client, driven by the test. */
interface FakeStream {
  readonly request: WatchConfigRequest;
  readonly cancelled: boolean;
  push(...events: WatchConfigResponse[]): void;
  fail(error: Error): void;
  end(): void;
}

interface FakeClient {
  readonly client: FollowerClient;
  readonly streams: FakeStream[];
  readonly lists: ListAllConfigRequest[];
  /** Answers ListAllConfig; the default fails with Unavailable. */
  onList: (request: ListAllConfigRequest) => ListAllConfigResponse;
}

function createFakeClient(): FakeClient {
  const fake: FakeClient = {
    streams: [],
    lists: [],
    onList: () => {
      throw new ConnectError("registrar down", Code.Unavailable);
    },
    client: undefined as unknown as FollowerClient,
  };
  const watchConfig = (request: WatchConfigRequest, options?: { signal?: AbortSignal }) => {
    const queue: WatchConfigResponse[] = [];
    let failure: Error | undefined;
    let ended = false;
    let cancelled = false;
    let wake: (() => void) | undefined;
    const notify = () => wake?.();
    const stream: FakeStream = {
      request,
      get cancelled() {
        return cancelled;
      },
      push: (...events) => {
        queue.push(...events);
        notify();
      },
      fail: (error) => {
        failure = error;
        notify();
      },
      end: () => {
        ended = true;
        notify();
      },
    };
    fake.streams.push(stream);
    const signal = options?.signal;
    signal?.addEventListener("abort", () => {
      cancelled = true;
      notify();
    });
    return (async function* () {
      for (;;) {
        const next = queue.shift();
        if (next !== undefined) {
          yield next;
          continue;
        }
        if (cancelled) throw new ConnectError("cancelled", Code.Canceled);
        if (failure !== undefined) throw failure;
        if (ended) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    })();
  };
  const listAllConfig = async (
    request: ListAllConfigRequest,
    options?: { signal?: AbortSignal },
  ) => {
    fake.lists.push(request);
    if (options?.signal?.aborted) throw new ConnectError("cancelled", Code.Canceled);
    return fake.onList(request);
  };
  (fake as { client: unknown }).client = { watchConfig, listAllConfig };
  return fake;
}

const projection = (service: string, origin: string, n: number): ServiceConfigProjection =>
  makeProjection(service, { origin, version: versionAt(n) });

const event = (
  type: WatchEventType,
  fields: {
    service?: string;
    origin?: string;
    version?: number;
    revision: number;
    resumed?: boolean;
    storeUnavailable?: boolean;
  },
): WatchConfigResponse =>
  create(WatchConfigResponseSchema, {
    type,
    service: fields.service ?? "",
    originCluster: fields.origin ?? "",
    revision: BigInt(fields.revision),
    resumed: fields.resumed ?? false,
    storeUnavailable: fields.storeUnavailable ?? false,
    projection:
      fields.service !== undefined && fields.version !== undefined
        ? projection(fields.service, fields.origin ?? "", fields.version)
        : undefined,
  });

const snapshot = (service: string, origin: string, version: number, revision: number) =>
  event(WatchEventType.SNAPSHOT, { service, origin, version, revision });
const upsert = (service: string, origin: string, version: number, revision: number) =>
  event(WatchEventType.UPSERT, { service, origin, version, revision });
const remove = (service: string, origin: string, revision: number) =>
  event(WatchEventType.DELETE, { service, origin, revision });
const synced = (revision: number, resumed = false) =>
  event(WatchEventType.SYNCED, { revision, resumed });
const keepalive = (revision: number, storeUnavailable = false) =>
  event(WatchEventType.KEEPALIVE, { revision, storeUnavailable });

interface Harness {
  readonly fake: FakeClient;
  readonly follower: ConfigFollower;
  readonly updates: FollowerUpdate[];
  readonly rejections: ReceivedRejection[];
  readonly modes: string[];
  readonly errors: { operation: string; error: Error }[];
  /** The messages of the stream errors reported. */
  streamErrors(): string[];
  readonly events: string[];
  dead: number;
  /** `origin/service@version` of every candidate in the current state, sorted. */
  held(): string[];
  /** Waits until the fake has received its `n`-th WatchConfig call and returns it. */
  stream(n: number): Promise<FakeStream>;
}

const followers: ConfigFollower[] = [];
afterEach(async () => {
  await Promise.all(followers.splice(0).map((f) => f.stop()));
});

function startFollower(
  options: Partial<ConfigFollowerOptions> = {},
  onList?: FakeClient["onList"],
  before?: (follower: ConfigFollower) => void,
): Harness {
  const fake = createFakeClient();
  if (onList !== undefined) fake.onList = onList;
  const harness: Harness = {
    fake,
    follower: undefined as unknown as ConfigFollower,
    updates: [],
    rejections: [],
    modes: [],
    errors: [],
    events: [],
    dead: 0,
    streamErrors() {
      return this.errors.filter((e) => e.operation === "watch").map((e) => e.error.message);
    },
    held() {
      const state = this.follower.state;
      if (state === undefined) return [];
      return [...state.candidates.values()]
        .map((c) => `${c.origin}/${c.service}@${c.projection.version.slice(-4, -1)}`)
        .sort();
    },
    async stream(n) {
      await waitFor(() => fake.streams.length >= n, 5_000, `WatchConfig call #${n}`);
      return fake.streams[n - 1] as FakeStream;
    },
  };
  const follower = createConfigFollower({
    client: fake.client,
    policy: createImportPolicy(),
    services: ["shop/a", "shop/b"],
    pollIntervalMs: 10_000,
    keepaliveTimeoutMs: 10_000,
    backoff: createReconnectBackoff({ initialMs: 1, maxMs: 4 }),
    ...options,
    observer: {
      onUpdate: (u) => harness.updates.push(u),
      onRejection: (r) => harness.rejections.push(r),
      onModeChange: (m) => harness.modes.push(m),
      onError: (operation, error) => harness.errors.push({ operation, error }),
      onStreamEvent: (type) => harness.events.push(type),
      onDeadConnection: () => {
        harness.dead++;
      },
      ...options.observer,
    },
  });
  (harness as { follower: ConfigFollower }).follower = follower;
  followers.push(follower);
  before?.(follower);
  follower.start();
  return harness;
}

const unavailable = () => new ConnectError("store down", Code.Unavailable);

describe("config follower: the stream", () => {
  it("asks for exactly the dependency set, ALL_ORIGINS, and applies a snapshot only when SYNCED completes it", async () => {
    const h = startFollower();
    const first = await h.stream(1);
    expect(first.request.services).toEqual(["shop/a", "shop/b"]);
    expect(first.request.view).toBe(ConfigView.ALL_ORIGINS);
    expect(first.request.resumeRevision).toBe(0n);
    first.push(snapshot("shop/a", "hub", 1, 5));
    await waitFor(() => h.events.length === 1);
    first.fail(unavailable()); // the stream dies in the middle of the snapshot
    const second = await h.stream(2);
    expect(h.follower.state).toBeUndefined(); // the partial snapshot was never applied
    expect(second.request.resumeRevision).toBe(0n);
    second.push(snapshot("shop/a", "hub", 1, 5), snapshot("shop/b", "hub", 2, 5), synced(5));
    await waitFor(() => h.updates.length === 1);
    expect(h.held()).toEqual(["hub/shop/a@001", "hub/shop/b@002"]);
    expect(h.updates[0]).toMatchObject({ via: "synced", first: true });
    expect(h.follower.state?.revision).toBe(5n);
  });

  it("resumes from the last revision applied: a replay keeps the state, a fresh snapshot replaces it", async () => {
    const h = startFollower();
    const s1 = await h.stream(1);
    s1.push(snapshot("shop/a", "hub", 1, 5), snapshot("shop/b", "hub", 1, 5), synced(5));
    s1.push(upsert("shop/a", "hub", 2, 6));
    await waitFor(() => h.updates.length === 2);
    expect(h.updates[1]).toMatchObject({ via: "change" });
    expect(h.updates[1]?.fresh.map((c) => c.service)).toEqual(["shop/a"]);
    s1.fail(unavailable());

    const s2 = await h.stream(2);
    expect(s2.request.resumeRevision).toBe(6n);
    s2.push(upsert("shop/b", "hub", 3, 7), synced(7, true));
    await waitFor(() => h.updates.length === 3);
    expect(h.held()).toEqual(["hub/shop/a@002", "hub/shop/b@003"]);
    s2.fail(unavailable());

    const s3 = await h.stream(3);
    expect(s3.request.resumeRevision).toBe(7n);
    s3.push(snapshot("shop/b", "hub", 3, 9), synced(9, false)); // shop/a was deleted meanwhile
    await waitFor(() => h.updates.length === 4);
    expect(h.held()).toEqual(["hub/shop/b@003"]);
  });

  it("applies DELETE, and a KEEPALIVE advances the resume point", async () => {
    const h = startFollower();
    const s1 = await h.stream(1);
    s1.push(snapshot("shop/a", "hub", 1, 5), snapshot("shop/b", "hub", 1, 5), synced(5));
    s1.push(remove("shop/b", "hub", 6), keepalive(11));
    await waitFor(() => h.events.includes("keepalive"));
    expect(h.held()).toEqual(["hub/shop/a@001"]);
    s1.fail(unavailable());
    expect((await h.stream(2)).request.resumeRevision).toBe(11n);
  });

  it("follows what the registrar says of its store, and releases no held projection on a keep-alive from a registrar without it", async () => {
    let now = 1_000_000;
    const reported: boolean[] = [];
    const h = startFollower({
      guard: { threshold: { fraction: 0.4, minCount: 1 }, holdMs: 1_000 },
      now: () => now,
      observer: { onRegistrarStore: (unavailable) => reported.push(unavailable) },
    });
    const s1 = await h.stream(1);
    s1.push(snapshot("shop/a", "hub", 1, 5), snapshot("shop/b", "hub", 1, 5), synced(5));
    await waitFor(() => h.follower.state?.revision === 5n);
    s1.fail(unavailable());
    // A fresh snapshot that lacks shop/b, from a registrar without its store: shop/b is held.
    const s2 = await h.stream(2);
    s2.push(
      snapshot("shop/a", "hub", 1, 7),
      event(WatchEventType.SYNCED, { revision: 7, storeUnavailable: true }),
    );
    await waitFor(() => h.follower.state?.revision === 7n);
    expect(h.follower.registrarStoreUnavailable).toBe(true);
    expect([...h.follower.held.keys()]).toEqual(["hub\u0000shop/b"]);
    now += 1_000; // the hold ran out
    s2.push(keepalive(7, true));
    await waitFor(() => h.events.filter((e) => e === "keepalive").length === 1);
    expect(h.follower.held.size).toBe(1);
    expect(h.held()).toEqual(["hub/shop/a@001", "hub/shop/b@001"]);
    s2.push(keepalive(7));
    await waitFor(() => h.follower.held.size === 0, 5_000, "the hold to be released");
    expect(h.follower.registrarStoreUnavailable).toBe(false);
    expect(h.held()).toEqual(["hub/shop/a@001"]);
    s2.push(keepalive(7, true));
    await waitFor(() => h.follower.registrarStoreUnavailable);
    s2.fail(unavailable());
    await h.stream(3);
    expect(h.follower.registrarStoreUnavailable).toBe(false);
    expect(reported).toEqual([true, false, true, false]);
  });

  it("rejects and never applies: an untrusted origin, a bad version over a good one, a service it did not ask for", async () => {
    const h = startFollower({ policy: createImportPolicy({ controlCluster: "hub" }) });
    const s1 = await h.stream(1);
    s1.push(
      snapshot("shop/a", "hub", 1, 5),
      snapshot("shop/a", "rogue", 9, 5), // newer, but not trusted
      snapshot("shop/z", "hub", 1, 5), // never asked for
      synced(5),
    );
    await waitFor(() => h.updates.length === 1);
    expect(h.held()).toEqual(["hub/shop/a@001"]);
    expect(h.rejections.map((r) => `${r.reason}:${r.origin}/${r.service}`)).toEqual([
      "untrusted_origin:rogue/shop/a",
      "not_requested:hub/shop/z",
    ]);

    // A bad version replacing a good projection: rejected, and the good one stays.
    const bad = upsert("shop/a", "hub", 3, 6);
    (bad.projection as ServiceConfigProjection).version = "yesterday";
    s1.push(bad, remove("shop/z", "hub", 7), upsert("shop/b", "hub", 4, 8));
    await waitFor(() => h.updates.length === 2);
    expect(h.held()).toEqual(["hub/shop/a@001", "hub/shop/b@004"]);
    expect(h.rejections.map((r) => r.reason)).toEqual([
      "untrusted_origin",
      "not_requested",
      "invalid_version",
      "not_requested",
    ]);

    // A fresh snapshot that repeats the same rejected projections does not count them again,
    // and a projection whose event and body disagree on the origin is malformed.
    s1.fail(unavailable());
    const s2 = await h.stream(2);
    const forged = snapshot("shop/b", "hub", 4, 9);
    (forged.projection as ServiceConfigProjection).originCluster = "rogue";
    s2.push(snapshot("shop/a", "hub", 1, 9), snapshot("shop/a", "rogue", 9, 9), forged, synced(9));
    await waitFor(() => h.updates.length === 3);
    expect(h.rejections.map((r) => r.reason).slice(4)).toEqual(["malformed_event"]);
    expect(h.held()).toEqual(["hub/shop/a@001", "hub/shop/b@004"]); // shop/b kept: not applied
  });

  it("rejects a projection over the projection limits as too_large and keeps the one it held", async () => {
    const h = startFollower();
    const s1 = await h.stream(1);
    s1.push(snapshot("shop/a", "hub", 1, 5), synced(5));
    await waitFor(() => h.updates.length === 1);
    expect(h.held()).toEqual(["hub/shop/a@001"]);

    // Too many bytes: one path of 300 KiB.
    const big = upsert("shop/a", "hub", 2, 6);
    const route = (big.projection as ServiceConfigProjection).routes[0];
    const match = route?.rules[0]?.matches[0];
    if (match?.path === undefined) throw new Error("the fixture has a path match");
    match.path.value = "x".repeat(300 * 1024);
    // Too many routes: the one route 300 times.
    const many = upsert("shop/a", "hub", 3, 7);
    const manyRoutes = many.projection as ServiceConfigProjection;
    manyRoutes.routes = Array.from({ length: 300 }, () => manyRoutes.routes[0] as Route);
    s1.push(big, many, upsert("shop/b", "hub", 4, 8));
    await waitFor(() => h.updates.length === 2);
    expect(h.held()).toEqual(["hub/shop/a@001", "hub/shop/b@004"]);
    expect(h.rejections.map((r) => [r.reason, r.version.slice(-4, -1)])).toEqual([
      ["too_large", "002"],
      ["too_large", "003"],
    ]);
    expect(h.rejections[0]?.message).toMatch(
      /^the projection of shop\/a takes \d+ bytes; at most 262144 are allowed \(from hub\)$/,
    );
    expect(h.rejections[1]?.message).toMatch(/holds 300 routes; at most 256 are allowed/);
  });

  it("treats protocol garbage as a failed stream and keeps its state", async () => {
    const h = startFollower();
    const s1 = await h.stream(1);
    s1.push(snapshot("shop/a", "hub", 1, 5), synced(5), snapshot("shop/b", "hub", 1, 6));
    const s2 = await h.stream(2);
    expect(h.streamErrors()[0]).toMatch(/SNAPSHOT event after SYNCED/);
    expect(h.held()).toEqual(["hub/shop/a@001"]);
    expect(s1.cancelled).toBe(true);

    // A registrar claiming to resume a stream the agent asked to start afresh.
    h.follower.setServices(["shop/a", "shop/c"]);
    const s3 = await h.stream(3);
    expect(s2.cancelled).toBe(true);
    expect(s3.request.resumeRevision).toBe(0n);
    s3.push(upsert("shop/c", "hub", 1, 7), synced(7, true));
    await waitFor(() => h.streamErrors().length === 2);
    expect(h.streamErrors()[1]).toMatch(/resumed, but the agent asked for a snapshot/);
    expect(h.follower.state?.services).toEqual(["shop/a", "shop/b"]);
    // Revisions going backwards are garbage too.
    const s4 = await h.stream(4);
    s4.push(snapshot("shop/c", "hub", 1, 8), synced(8), upsert("shop/c", "hub", 2, 3));
    await waitFor(() => h.streamErrors().length === 3);
    expect(h.streamErrors()[2]).toMatch(/revision 3 after revision 8/);
    expect(h.held()).toEqual(["hub/shop/c@001"]);
  });

  it("abandons a silent stream after the keep-alive timeout, reports the connection dead, and polls meanwhile", async () => {
    const h = startFollower({ keepaliveTimeoutMs: 60 });
    const s1 = await h.stream(1);
    s1.push(snapshot("shop/a", "hub", 1, 5), synced(5));
    // Keep-alives keep it alive well past the timeout...
    for (let i = 0; i < 8; i++) {
      s1.push(keepalive(5));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(h.fake.streams).toHaveLength(1);
    // ...silence kills it.
    const s2 = await h.stream(2);
    expect(s1.cancelled).toBe(true);
    expect(h.dead).toBeGreaterThanOrEqual(1);
    expect(h.streamErrors()[0]).toMatch(/keep-alive timeout/);
    await waitFor(() => h.follower.mode === "poll");
    expect(h.held()).toEqual(["hub/shop/a@001"]);
    s2.push(synced(5, true));
    await waitFor(() => h.follower.mode === "watch");
    expect(h.modes).toEqual(["poll", "watch"]);
  });
});

describe("config follower: polling", () => {
  const page = (projections: ServiceConfigProjection[], revision: number, next = "") =>
    create(ListAllConfigResponseSchema, {
      projections,
      revision: BigInt(revision),
      nextPageToken: next,
    });

  it("falls back to ListAllConfig while the stream is down, and goes back to the stream after a good poll", async () => {
    const h = startFollower({
      pollIntervalMs: 20,
      backoff: createReconnectBackoff({ initialMs: 60_000, maxMs: 60_000 }),
    });
    const s1 = await h.stream(1);
    s1.push(snapshot("shop/a", "hub", 1, 5), synced(5));
    await waitFor(() => h.updates.length === 1);
    s1.fail(unavailable());
    await waitFor(() => h.follower.mode === "poll");
    await waitFor(() => h.fake.lists.length >= 2, 5_000, "failing polls");
    expect(h.held()).toEqual(["hub/shop/a@001"]); // failed polls change nothing
    h.fake.onList = (request) => {
      expect(request.view).toBe(ConfigView.ALL_ORIGINS);
      expect(request.services).toEqual(["shop/a", "shop/b"]);
      return request.pageToken === ""
        ? page([projection("shop/a", "hub", 2)], 12, "next")
        : page([projection("shop/b", "east", 3)], 12);
    };
    // The backoff is a minute long: only the good poll can bring the stream back this soon.
    const s2 = await h.stream(2);
    expect(h.held()).toEqual(["east/shop/b@003", "hub/shop/a@002"]);
    expect(h.updates.at(-1)?.via).toBe("poll");
    expect(s2.request.resumeRevision).toBe(12n);
    s2.push(synced(12, true));
    await waitFor(() => h.follower.mode === "watch");
    const polls = h.fake.lists.length;
    await new Promise((resolve) => setTimeout(resolve, 100)); // five poll intervals
    expect(h.fake.lists.length).toBe(polls); // polling stopped
  });

  it("in poll mode only polls, every page at one revision, and lists again when a page token was compacted", async () => {
    let calls = 0;
    const h = startFollower({ mode: "poll", pollIntervalMs: 30 }, (request) => {
      calls++;
      if (calls === 2) throw new ConnectError("compacted", Code.OutOfRange);
      return request.pageToken === ""
        ? page([projection("shop/a", "hub", 1)], 4, "p2")
        : page([projection("shop/b", "hub", 1)], 4);
    });
    await waitFor(() => h.updates.length >= 1);
    expect(h.held()).toEqual(["hub/shop/a@001", "hub/shop/b@001"]);
    expect(h.fake.streams).toHaveLength(0);
    expect(h.follower.mode).toBe("poll");
    expect(h.fake.lists.slice(0, 4).map((r) => r.pageToken)).toEqual(["", "p2", "", "p2"]);
  });
});

describe("config follower: the dependency set", () => {
  it("re-subscribes with a fresh snapshot when the set changes, serving the old state meanwhile", async () => {
    const h = startFollower({ services: ["shop/a"] });
    const s1 = await h.stream(1);
    s1.push(snapshot("shop/a", "hub", 1, 5), synced(5));
    await waitFor(() => h.updates.length === 1);
    h.follower.setServices(["shop/b", "shop/a", "shop/a"]);
    const s2 = await h.stream(2);
    expect(s1.cancelled).toBe(true);
    expect(s2.request.services).toEqual(["shop/a", "shop/b"]);
    expect(s2.request.resumeRevision).toBe(0n);
    expect(h.follower.state?.services).toEqual(["shop/a"]);
    s2.push(snapshot("shop/a", "hub", 1, 7), snapshot("shop/b", "hub", 1, 7), synced(7));
    await waitFor(() => h.updates.length === 2);
    expect(h.follower.state?.services).toEqual(["shop/a", "shop/b"]);
    expect(h.updates[1]?.fresh.map((c) => c.service)).toEqual(["shop/b"]);
    h.follower.setServices(["shop/b", "shop/a"]); // the same set: nothing happens
    expect(h.fake.streams).toHaveLength(2);
  });

  it("watches nothing for an empty set, and starts when the set gets a service", async () => {
    const h = startFollower({ services: [] });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(h.fake.streams).toHaveLength(0);
    expect(h.fake.lists).toHaveLength(0);
    h.follower.setServices(["shop/a"]);
    expect((await h.stream(1)).request.services).toEqual(["shop/a"]);
  });

  it("starts from a cached state: resumes from its revision when the set is the same", async () => {
    const cached = projection("shop/a", "hub", 1);
    const h = startFollower({
      services: ["shop/a"],
      initial: {
        services: ["shop/a"],
        revision: 40n,
        candidates: new Map([
          ["hub\u0000shop/a", { origin: "hub", service: "shop/a", projection: cached }],
        ]),
      },
    });
    const s1 = await h.stream(1);
    expect(s1.request.resumeRevision).toBe(40n);
    s1.push(synced(41, true));
    await waitFor(() => h.updates.length === 1);
    expect(h.updates[0]).toMatchObject({ first: false, fresh: [] });
    expect(h.held()).toEqual(["hub/shop/a@001"]);
  });

  it("stops: the stream is cancelled and no call follows", async () => {
    const h = startFollower();
    const s1 = await h.stream(1);
    await h.follower.stop();
    expect(s1.cancelled).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(h.fake.streams).toHaveLength(1);
  });
});

describe("config follower: resync (the origin keys gained a key)", () => {
  const oldKey = newSigningKey();
  const rotated = newSigningKey();
  /** hub's projection of `service` at version `n`, signed with `key`, as the agent decodes it. */
  const signed = (service: string, n: number, key: SigningKey) =>
    signedProjection(projection(service, "hub", n), "hub", key);
  const signedEvent = (type: WatchEventType, n: number, key: SigningKey, revision: number) =>
    create(WatchConfigResponseSchema, {
      type,
      service: "shop/a",
      originCluster: "hub",
      revision: BigInt(revision),
      projection: signed("shop/a", n, key),
    });
  const keysOf = (...keys: SigningKey[]) => originKeysOf({ hub: keys });
  /** A policy that requires signatures, with the keys `keys()` returns at each check. */
  const signedPolicy = (keys: () => OriginKeys) =>
    createImportPolicy({ signatures: createOriginKeysCheck(keys, true) });

  it("re-subscribes to the same set with a fresh snapshot: a projection refused as unknown_key is taken once its key is known", async () => {
    let keys = keysOf(oldKey);
    const h = startFollower({ services: ["shop/a"], policy: signedPolicy(() => keys) });
    const s1 = await h.stream(1);
    s1.push(signedEvent(WatchEventType.SNAPSHOT, 1, oldKey, 5), synced(5));
    s1.push(signedEvent(WatchEventType.UPSERT, 2, rotated, 6), keepalive(6));
    await waitFor(() => h.rejections.length === 1 && h.follower.state !== undefined);
    expect(h.rejections[0]).toMatchObject({ reason: "unknown_key", version: versionAt(2) });
    expect(h.held()).toEqual(["hub/shop/a@001"]);
    keys = keysOf(oldKey, rotated);
    h.follower.resync("a key was added");
    const s2 = await h.stream(2);
    expect(s1.cancelled).toBe(true);
    expect(s2.request.services).toEqual(["shop/a"]);
    expect(s2.request.resumeRevision).toBe(0n);
    s2.push(signedEvent(WatchEventType.SNAPSHOT, 2, rotated, 7), synced(7));
    await waitFor(() => h.held()[0] === "hub/shop/a@002");
    expect(h.rejections).toHaveLength(1);
    // Once synced from a snapshot, a later stream resumes again.
    s2.fail(unavailable());
    expect((await h.stream(3)).request.resumeRevision).toBe(7n);
  });

  it("refused again after a resync, the held projection stays (a key removed revokes nothing held)", async () => {
    let keys = keysOf(oldKey);
    const h = startFollower({ services: ["shop/a"], policy: signedPolicy(() => keys) });
    const s1 = await h.stream(1);
    s1.push(signedEvent(WatchEventType.SNAPSHOT, 1, oldKey, 5), synced(5));
    await waitFor(() => h.updates.length === 1);
    keys = keysOf(rotated);
    h.follower.resync("keys changed");
    const s2 = await h.stream(2);
    s2.push(signedEvent(WatchEventType.SNAPSHOT, 1, oldKey, 5), synced(8));
    await waitFor(() => h.updates.length === 2);
    expect(h.rejections.map((r) => r.reason)).toEqual(["unknown_key"]);
    expect(h.held()).toEqual(["hub/shop/a@001"]);
  });

  it("asked before the start, a cached state's first stream is a snapshot, not a resume", async () => {
    const cached = signed("shop/a", 1, oldKey);
    const h = startFollower(
      {
        services: ["shop/a"],
        policy: signedPolicy(() => keysOf(oldKey)),
        initial: {
          services: ["shop/a"],
          revision: 40n,
          candidates: new Map([
            ["hub\u0000shop/a", { origin: "hub", service: "shop/a", projection: cached }],
          ]),
        },
      },
      undefined,
      (follower) => follower.resync("restarted"),
    );
    const s1 = await h.stream(1);
    expect(s1.request.resumeRevision).toBe(0n);
    expect(h.held()).toEqual(["hub/shop/a@001"]);
  });

  it("in poll mode lists again at once", async () => {
    const h = startFollower(
      { services: ["shop/a"], mode: "poll", policy: signedPolicy(() => NO_ORIGIN_KEYS) },
      () =>
        create(ListAllConfigResponseSchema, {
          revision: 3n,
          projections: [signed("shop/a", 1, oldKey)],
        }),
    );
    await waitFor(() => h.fake.lists.length === 1 && h.rejections.length === 1);
    expect(h.rejections[0]?.reason).toBe("unknown_key");
    h.follower.resync("a key was added");
    await waitFor(() => h.fake.lists.length === 2);
  });
});
