/**
 * The etcd store when etcd is not there: unreachable, frozen (SIGSTOP),
 * killed and restarted. Calls must fail fast with StoreUnavailableError, a
 * watch must end with one onError, and the same store must work again once
 * etcd is back, so the registrar recovers without a restart.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { create } from "@bufbuild/protobuf";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  RouteSchema,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import {
  type ConfigStore,
  type StoreEvent,
  StoreUnavailableError,
} from "../../services/registrar/store/config-store.js";
import {
  createEtcdStore,
  type EtcdStoreOptions,
} from "../../services/registrar/store/etcd-store.js";
import { type EtcdHandle, startEtcd } from "../support/etcd.js";
import { waitFor } from "../support/wait.js";

const TIMEOUT_MS = 500;

/** A loopback URL nothing listens on (a port that was free a moment ago). */
async function deadEndpoint(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return `http://127.0.0.1:${address.port}`;
}

function projection(service: string) {
  return create(ServiceConfigProjectionSchema, { service, version: "2026-11-01T10:00:00Z" });
}

/** Resolves to the error `promise` rejects with and how long that took. */
async function failure(promise: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  try {
    await promise;
  } catch (error) {
    return { error, ms: Date.now() - started };
  }
  throw new Error("expected a rejection");
}

/** Watches `store` from `after` and records events and errors. */
function record(store: ConfigStore, after: number) {
  const events: StoreEvent[] = [];
  const errors: Error[] = [];
  const watch = store.watch(after, {
    onEvents: (batch) => events.push(...batch),
    onError: (error) => errors.push(error),
  });
  return { events, errors, watch };
}

describe("etcd store: etcd unavailable", () => {
  let etcd: EtcdHandle;
  const stores: ConfigStore[] = [];
  const open = (options: Partial<EtcdStoreOptions> = {}): ConfigStore => {
    const store = createEtcdStore({
      origin: "hub",
      endpoints: [etcd.endpoint],
      prefix: `/integration-${randomUUID().slice(0, 8)}`,
      requestTimeoutMs: TIMEOUT_MS,
      ...options,
    });
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    etcd = await startEtcd();
  });
  afterEach(async () => {
    await etcd.resume();
    await Promise.all(stores.splice(0).map((store) => store.close()));
  });
  afterAll(async () => {
    await etcd?.stop();
  });

  it("lists a range larger than gRPC's default 4 MiB message limit", async () => {
    const store = open({ requestTimeoutMs: 5_000 });
    const hostnames = Array.from({ length: 2_000 }, (_, i) => `${"h".repeat(90)}-${i}.example`);
    for (let i = 0; i < 30; i++) {
      const big = projection(`big/svc-${i}`);
      big.routes.push({ ...create(RouteSchema), hostnames });
      await store.put(big);
    }
    const listed = await store.list();
    expect(listed.entries).toHaveLength(30);
    expect(listed.entries[0]?.projection.routes[0]?.hostnames).toHaveLength(2_000);
  });

  it("fails fast on an endpoint nobody listens on", async () => {
    const store = open({ endpoints: [await deadEndpoint()] });
    for (const call of [
      () => store.list(),
      () => store.put(projection("shop/web")),
      () => store.delete("shop/web"),
      () => store.ping(),
      () => store.revision(),
    ]) {
      const { error, ms } = await failure(call());
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(ms).toBeLessThan(TIMEOUT_MS + 400);
    }
    const watcher = record(store, 0);
    await waitFor(() => watcher.errors.length > 0, 3_000, "the watch to fail");
    expect(watcher.errors).toHaveLength(1);
    expect(watcher.errors[0]).toBeInstanceOf(StoreUnavailableError);
  });

  it("fails over to another endpoint when one of several is down", async () => {
    const store = open({ endpoints: [await deadEndpoint(), etcd.endpoint] });
    for (let i = 0; i < 10; i++) await store.ping();
    const revision = await store.put(projection("shop/web"));
    expect((await store.list()).revision).toBeGreaterThanOrEqual(revision);
  });

  it("sends a write again on another member when no connection to the one picked could be made (it never left), and writes it once", async () => {
    const dead = await deadEndpoint();
    // Fresh stores, each one's first call a write: the dead member is picked first about
    // half the time (eight misses in a row: 1 in 256).
    for (let i = 0; i < 8; i++) {
      const store = open({ endpoints: [dead, etcd.endpoint] });
      const before = await open().revision();
      const revision = await store.put(projection(`shop/web-${i}`));
      expect(revision).toBe(before + 1);
    }
  });

  it("times out within the request timeout on a frozen etcd, and works again once it thaws", async () => {
    const store = open();
    await store.put(projection("shop/web"));
    await etcd.pause();
    for (const call of [
      () => store.list(),
      () => store.put(projection("shop/cart")),
      () => store.ping(),
    ]) {
      const { error, ms } = await failure(call());
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
      expect(ms).toBeLessThan(TIMEOUT_MS + 400);
    }
    await etcd.resume();
    await store.ping();
    expect((await store.list()).entries.map((e) => e.service)).toContain("shop/web");
  });

  it("ends a watch with one StoreUnavailableError when etcd freezes", async () => {
    const store = open({ watchProbeIntervalMs: 100 });
    const start = await store.revision();
    const watcher = record(store, start);
    await store.put(projection("shop/web"));
    await waitFor(() => watcher.events.length === 1, 5_000, "the first event");
    await etcd.pause();
    await waitFor(() => watcher.errors.length > 0, 5_000, "the watch to notice the freeze");
    expect(watcher.errors[0]).toBeInstanceOf(StoreUnavailableError);
    await etcd.resume();
    await store.put(projection("shop/cart"));
    await store.ping();
    expect(watcher.errors).toHaveLength(1);
    expect(watcher.events).toHaveLength(1);
  });

  it("ends a watch when etcd dies, and the same store works again after etcd restarts", async () => {
    const store = open();
    const written = await store.put(projection("shop/web"));
    const watcher = record(store, written);
    await store.put(projection("shop/cart"));
    await waitFor(() => watcher.events.length === 1, 5_000, "the first event");

    const restarted = etcd.restart();
    await waitFor(() => watcher.errors.length > 0, 5_000, "the watch to notice etcd died");
    expect(watcher.errors).toHaveLength(1);
    expect(watcher.errors[0]).toBeInstanceOf(StoreUnavailableError);
    await restarted;

    // The same store, not a new one: etcd kept its data and revisions.
    await store.ping();
    const listed = await store.list();
    expect(listed.entries.map((e) => e.service).sort()).toEqual(["shop/cart", "shop/web"]);
    const again = record(store, listed.revision);
    const next = await store.put(projection("shop/new"));
    await waitFor(() => again.events.length === 1, 5_000, "an event on the new watch");
    expect(again.events[0]?.revision).toBe(next);
    expect(watcher.errors).toHaveLength(1);
  });
});
