/**
 * Load isolation on a real etcd: registrars in this process (over etcd
 * stores wrapped to count their reads and pings) with real WatchConfig
 * streams open, then hundreds of concurrent unfiltered ListAllConfig calls
 * over HTTP/2 with the generated client. No watch stream ends, /readyz stays
 * ready, every call is answered (OK, or UNAVAILABLE at once with retry
 * advice, counted), and the store is read a bounded number of times: not at
 * all for first pages (the synced cache serves them), at most once per
 * distinct page (and never more at once than the limit) for later pages
 * that only the store can serve.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import {
  ConfigService,
  ConfigView,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import type { ConfigStore } from "../../services/registrar/store/config-store.js";
import { createEtcdStore } from "../../services/registrar/store/etcd-store.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { waitFor } from "../support/wait.js";
import { recordWatch, type WatchRecorder } from "../support/watch-recorder.js";

const shared = useSharedEtcd("load-");
const started: TestRegistrar[] = [];
const watches: WatchRecorder[] = [];
afterEach(async () => {
  await Promise.all(watches.splice(0).map((w) => w.cancel()));
  await Promise.all(started.splice(0).map((r) => r.stop()));
});

/** An etcd store whose list reads and pings are counted, with the most reads ever in flight at once. */
interface CountedStore {
  readonly store: ConfigStore;
  readonly counts: { lists: number; pings: number; running: number; most: number };
}

function countedEtcdStore(prefix: string): CountedStore {
  const inner = createEtcdStore({
    origin: "hub",
    endpoints: [shared.etcd.endpoint],
    prefix,
    requestTimeoutMs: 1_000,
  });
  const counts = { lists: 0, pings: 0, running: 0, most: 0 };
  const store: ConfigStore = {
    ...inner,
    list: async (options) => {
      counts.lists++;
      counts.most = Math.max(counts.most, ++counts.running);
      try {
        return await inner.list(options);
      } finally {
        counts.running--;
      }
    },
    ping: () => {
      counts.pings++;
      return inner.ping();
    },
  };
  return { store, counts };
}

/** Writes `count` projections of `origin` (services `ns-N/svc-NNNN`) under `prefix`, in batches. */
async function fill(prefix: string, origin: string, count: number): Promise<void> {
  const store = createEtcdStore({ origin, endpoints: [shared.etcd.endpoint], prefix });
  try {
    for (let i = 0; i < count; i += 100) {
      await store.write(
        Array.from({ length: Math.min(100, count - i) }, (_, k) => ({
          type: "put" as const,
          projection: makeProjection(`ns-${(i + k) % 4}/svc-${String(i + k).padStart(4, "0")}`, {
            version: versionAt(origin === "hub" ? 1 : 2),
          }),
        })),
      );
    }
  } finally {
    await store.close();
  }
}

/** Flags that give registrars one page-token key, so that each takes the others' tokens. */
async function sharedKeyFlags(): Promise<string[]> {
  const keyFile = join(await mkdtemp(join(tmpdir(), "page-token-")), "key");
  await writeFile(keyFile, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600 });
  return ["--page-token-key-file", keyFile];
}

/** A registrar in this process over `store`, with a gRPC client over HTTP/2 (h2c). */
async function registrarOver(prefix: string, store: ConfigStore, extra: string[]) {
  const r = await startTestRegistrar(
    [
      "--cluster",
      "hub",
      "--store",
      "etcd",
      "--etcd-endpoints",
      shared.etcd.endpoint,
      "--etcd-prefix",
      prefix,
      "--store-timeout",
      "1s",
      ...extra,
    ],
    { store },
  );
  started.push(r);
  const h2 = createClient(ConfigService, createGrpcTransport({ baseUrl: r.url }));
  return { r, h2 };
}

/** Opens WatchConfig streams on `client` (every service, one service, the ALL_ORIGINS view) and waits until each is synced. */
async function openWatches(client: Client<typeof ConfigService>): Promise<WatchRecorder[]> {
  const opened = [
    recordWatch(client, {}),
    recordWatch(client, { services: ["ns-1/svc-0001"] }),
    recordWatch(client, { view: ConfigView.ALL_ORIGINS }),
  ];
  watches.push(...opened);
  for (const w of opened) {
    await w.until((events) => events.some((e) => e.type === WatchEventType.SYNCED), 10_000);
  }
  return opened;
}

/** The events of a stream other than keep-alives. */
const changes = (w: WatchRecorder) => w.events.filter((e) => e.type !== WatchEventType.KEEPALIVE);

/**
 * Runs `calls` while sampling `/readyz` of `urls` and the state of each
 * registrar's cache; resolves with the calls' outcomes and what was sampled.
 */
async function underLoad<T>(
  registrars: TestRegistrar[],
  calls: (() => Promise<T>)[],
): Promise<{
  outcomes: ({ ok: true; value: T } | { ok: false; error: ConnectError; ms: number })[];
  readyz: number[];
  states: string[];
}> {
  const readyz: number[] = [];
  const states = new Set<string>();
  let done = false;
  const sampler = (async () => {
    while (!done) {
      for (const { url, registrar } of registrars) {
        states.add(registrar.cache.state);
        readyz.push((await fetch(`${url}/readyz`)).status);
      }
    }
  })();
  const outcomes = await Promise.all(
    calls.map(async (call) => {
      const startedAt = Date.now();
      try {
        return { ok: true as const, value: await call() };
      } catch (error) {
        return { ok: false as const, error: ConnectError.from(error), ms: Date.now() - startedAt };
      }
    }),
  );
  done = true;
  await sampler;
  return { outcomes, readyz, states: [...states] };
}

describe("list calls under load", () => {
  it("hundreds of concurrent unfiltered ListAllConfig calls: watch streams stay open, /readyz stays ready, every call is answered, first pages read nothing from the store and later pages at most once each, never more at once than the limit", async () => {
    const prefix = shared.freshPrefix();
    await fill(prefix, "hub", 600);
    await fill(prefix, "east", 200);
    const keyFlags = await sharedKeyFlags();
    const limits = ["--list-read-concurrency", "2", "--list-read-queue", "4"];
    const a = countedEtcdStore(prefix);
    const b = countedEtcdStore(prefix);
    const { r: ra, h2: ca } = await registrarOver(prefix, a.store, [...keyFlags, ...limits]);
    const { r: rb, h2: cb } = await registrarOver(prefix, b.store, [...keyFlags, ...limits]);
    const streams = [...(await openWatches(ca)), ...(await openWatches(cb))];
    const seen = streams.map((w) => changes(w).length);

    // First pages: every one from the synced cache.
    a.counts.lists = 0;
    const pingsBefore = a.counts.pings;
    const views = [ConfigView.EFFECTIVE, ConfigView.ALL_ORIGINS, ConfigView.UNSPECIFIED];
    const first = await underLoad(
      [ra],
      Array.from(
        { length: 450 },
        (_, i) => () => ca.listAllConfig({ view: views[i % 3], pageSize: 100 }),
      ),
    );
    const okFirst = first.outcomes.filter((o) => o.ok);
    expect(okFirst).toHaveLength(450);
    for (const o of okFirst) expect(o.value.projections).toHaveLength(100);
    expect(a.counts.lists).toBe(0);
    // The barrier pings are coalesced: far fewer than the calls.
    expect(a.counts.pings - pingsBefore).toBeLessThan(150);
    expect(first.readyz.length).toBeGreaterThan(0);
    expect(new Set(first.readyz)).toEqual(new Set([200]));
    expect(first.states).toEqual(["synced"]);

    // Later pages no kept listing covers, on a replica whose cache moved on: the store at the
    // token's revision. Tokens after 60 positions of one listing read at one revision.
    const whole = await ca.listAllConfig({ view: ConfigView.ALL_ORIGINS, pageSize: 1000 });
    expect(whole.projections).toHaveLength(800);
    const tokens: { token: string; after: number }[] = [];
    for (let k = 1; k <= 60; k++) {
      const page = await ca.listAllConfig({ view: ConfigView.ALL_ORIGINS, pageSize: k * 5 });
      tokens.push({ token: page.nextPageToken, after: k * 5 });
      expect(page.revision).toBe(whole.revision);
    }
    const hub = createEtcdStore({ origin: "hub", endpoints: [shared.etcd.endpoint], prefix });
    const written = await hub.put(makeProjection("ns-0/later"));
    await hub.close();
    await waitFor(() => rb.registrar.cache.revision >= written, 10_000, "B's cache to move on");
    b.counts.lists = 0;
    b.counts.most = 0;
    const later = await underLoad(
      [ra, rb],
      Array.from({ length: 300 }, (_, i) => {
        const { token } = tokens[i % tokens.length] as { token: string };
        return () =>
          cb.listAllConfig({ view: ConfigView.ALL_ORIGINS, pageSize: 100, pageToken: token });
      }),
    );
    const expected = whole.projections;
    let ok = 0;
    let refused = 0;
    for (const [i, outcome] of later.outcomes.entries()) {
      if (outcome.ok) {
        ok++;
        const { after } = tokens[i % tokens.length] as { after: number };
        expect(outcome.value.revision).toBe(whole.revision);
        expect(outcome.value.projections).toEqual(expected.slice(after, after + 100));
        continue;
      }
      refused++;
      expect(Code[outcome.error.code]).toBe("Unavailable");
      expect(outcome.error.rawMessage).toMatch(/retry after 1s/);
      expect(outcome.error.metadata.get("grpc-retry-pushback-ms")).toBe("1000");
      // At once, or after waiting at most the store timeout (1s) in line.
      expect(outcome.ms).toBeLessThan(5_000);
    }
    expect(ok + refused).toBe(300);
    expect(ok).toBeGreaterThan(0);
    // At most one read per distinct page, never more than two at once.
    expect(b.counts.lists).toBeGreaterThan(0);
    expect(b.counts.lists).toBeLessThanOrEqual(tokens.length);
    expect(b.counts.most).toBeLessThanOrEqual(2);
    const metrics = await (await fetch(`${rb.url}/metrics`)).text();
    const counted = (outcome: string) =>
      Number(
        new RegExp(`aether_config_list_store_reads_total\\{outcome="${outcome}"\\} (\\d+)`).exec(
          metrics,
        )?.[1],
      );
    expect(counted("read")).toBe(b.counts.lists);
    expect(counted("refused")).toBeLessThanOrEqual(refused);
    expect(new Set(later.readyz)).toEqual(new Set([200]));
    expect(later.states).toEqual(["synced"]);

    // No watch stream was closed or re-synced; each still follows the store: the unfiltered
    // ones got the one write (an upsert of ns-0/later), the filtered ones nothing.
    for (const [i, w] of streams.entries()) {
      const grown = (seen[i] as number) + (i % 3 === 1 ? 0 : 1);
      await w.until((events) => events.length > 0 && changes(w).length >= grown, 5_000);
      expect(
        changes(w)
          .slice(seen[i])
          .map((e) => `${WatchEventType[e.type]}:${e.service}`),
      ).toEqual(i % 3 === 1 ? [] : ["UPSERT:ns-0/later"]);
      expect(w.done).toBe(false);
    }
    console.info(
      `list load: first pages ${okFirst.length} ok, ${a.counts.pings - pingsBefore} barrier pings, 0 store reads; ` +
        `later pages ${ok} ok, ${refused} refused, ${b.counts.lists} store reads (at most ${b.counts.most} at once)`,
    );
  }, 60_000);
});
