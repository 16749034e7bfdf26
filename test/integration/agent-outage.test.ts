/**
 * The agent as an OS process through outages, against a real etcd and real
 * registrar processes (the hub's exports are written straight to the store
 * here): a killed registrar, a frozen etcd, a frozen registrar (a silent
 * partition), an agent restarted while its registrar is down, and a corrupt
 * cache file. The route table never shrinks; the agent falls back to polling
 * while its registrar is away and returns to the stream by itself; through
 * a store outage the registrar keeps the stream open on its retained view.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CACHE_FILE_NAME, decodeCacheFile } from "../../clients/agent/last-known-cache.js";
import type { ConfigStore } from "../../services/registrar/store/config-store.js";
import { createEtcdStore } from "../../services/registrar/store/etcd-store.js";
import {
  type AgentProcess,
  startAgentProcess,
  startSpokeRegistrar,
  stopAllAgents,
} from "../support/agent-process.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("ao");
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await stopAllAgents();
  await stopAllRegistrars();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "aether-agent-"));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A fresh prefix with the hub's exports of shop/a and shop/b written to it. */
async function hubExports(): Promise<{ prefix: string; hub: ConfigStore }> {
  const prefix = shared.freshPrefix();
  const hub = createEtcdStore({ origin: "hub", endpoints: [shared.etcd.endpoint], prefix });
  cleanups.push(() => hub.close());
  await hub.put(makeProjection("shop/a", { version: versionAt(1) }));
  await hub.put(makeProjection("shop/b", { version: versionAt(1) }));
  return { prefix, hub };
}

function startSpoke(prefix: string, extra: string[] = []): Promise<RegistrarProcess> {
  const options = { endpoint: shared.etcd.endpoint, prefix };
  return startSpokeRegistrar({ ...options, extra: ["--control-cluster", "hub", ...extra] });
}

function startAgent(registrar: string, extra: string[]): Promise<AgentProcess> {
  return startAgentProcess([
    "--registrar",
    registrar,
    "--cluster",
    "spoke",
    "--control-cluster",
    "hub",
    "--deps",
    "shop/a,shop/b",
    "--poll-interval",
    "200ms",
    "--backoff-max",
    "300ms",
    ...extra,
  ]);
}

const MODE = (mode: string) => `aether_config_agent_mode{mode="${mode}"}`;
const POLLS_ERROR = 'aether_config_agent_polls_total{result="error"}';
const STORE_UNAVAILABLE = "aether_config_agent_registrar_store_unavailable";

async function readyTable(agent: AgentProcess): Promise<string> {
  await agent.waitUntilReady();
  return (await agent.get("/routes")).body;
}

/** Asserts the agent still serves exactly `table` and is ready. */
async function stillServes(agent: AgentProcess, table: string): Promise<void> {
  expect((await agent.get("/routes")).body).toBe(table);
  expect((await agent.get("/readyz")).status).toBe(200);
}

async function versionOf(agent: AgentProcess, service: string): Promise<string | undefined> {
  return (await agent.routes()).find((e) => e.service === service)?.version;
}

describe("agent through outages", () => {
  it("keeps serving when its registrar is killed (polling meanwhile) and when etcd freezes (the stream stays, saying so), and returns to the stream", async () => {
    const { prefix, hub } = await hubExports();
    const spoke = await startSpoke(prefix);
    const port = new URL(spoke.url).port;
    const agent = await startAgent(spoke.url, ["--cache-dir", await tempDir()]);
    const table = await readyTable(agent);
    expect(JSON.parse(table).services).toHaveLength(2);

    await spoke.kill();
    await agent.waitForMetric(MODE("poll"), (v) => v === 1);
    await agent.waitForMetric(POLLS_ERROR, (v) => v >= 1);
    await stillServes(agent, table);
    await hub.put(makeProjection("shop/a", { version: versionAt(2) })); // while the spoke is down

    await startSpoke(prefix, ["--listen", `127.0.0.1:${port}`, "--keepalive", "200ms"]);
    await agent.waitForMetric(MODE("watch"), (v) => v === 1);
    await waitFor(
      async () => (await versionOf(agent, "shop/a")) === versionAt(2),
      10_000,
      "the change",
    );
    expect(await agent.metric("aether_config_stream_reconnects_total")).toBeGreaterThanOrEqual(1);
    const tableAfter = (await agent.get("/routes")).body;

    // The registrar keeps the stream open on its retained view and says so: no poll, no reconnect.
    const reconnects = await agent.metric("aether_config_stream_reconnects_total");
    const polls = await agent.metric(POLLS_ERROR);
    await shared.etcd.pause();
    try {
      await agent.waitForMetric(STORE_UNAVAILABLE, (v) => v === 1, 15_000);
      expect(await agent.metric(MODE("watch"))).toBe(1);
      await stillServes(agent, tableAfter);
    } finally {
      await shared.etcd.resume();
    }
    await agent.waitForMetric(STORE_UNAVAILABLE, (v) => v === 0, 15_000);
    expect(await agent.metric("aether_config_stream_reconnects_total")).toBe(reconnects);
    expect(await agent.metric(POLLS_ERROR)).toBe(polls);
    expect(
      agent.logs.some((l) => String(l.msg).startsWith("the registrar cannot reach its store")),
    ).toBe(true);
    const upserts = await agent.metric('aether_config_agent_stream_events_total{type="upsert"}');
    await hub.put(makeProjection("shop/b", { version: versionAt(3) }));
    await waitFor(
      async () => (await versionOf(agent, "shop/b")) === versionAt(3),
      10_000,
      "a pushed change",
    );
    expect(await agent.metric('aether_config_agent_stream_events_total{type="upsert"}')).toBe(
      upserts + 1,
    );
  }, 60_000);

  it("detects a silent, frozen registrar by the keep-alive timeout, keeps serving, and resumes when it thaws", async () => {
    const { prefix } = await hubExports();
    const spoke = await startSpoke(prefix, ["--keepalive", "200ms"]);
    const agent = await startAgent(spoke.url, ["--keepalive-timeout", "1s"]);
    const table = await readyTable(agent);
    await agent.waitForMetric(
      'aether_config_agent_stream_events_total{type="keepalive"}',
      (v) => v >= 1,
    );
    process.kill(spoke.pid, "SIGSTOP");
    try {
      await agent.waitForLog(
        (l) =>
          l.msg === "stream failed; keeping the last-known config" &&
          String(l.err).includes("keep-alive timeout"),
      );
      await agent.waitForMetric(MODE("poll"), (v) => v === 1);
      await agent.waitForMetric(POLLS_ERROR, (v) => v >= 1);
      await stillServes(agent, table);
    } finally {
      process.kill(spoke.pid, "SIGCONT");
    }
    await agent.waitForMetric(MODE("watch"), (v) => v === 1, 15_000);
    await stillServes(agent, table);
  }, 60_000);

  it("serves its cached table at once when restarted while its registrar is down, and reports and ignores a corrupt cache", async () => {
    const { prefix } = await hubExports();
    const spoke = await startSpoke(prefix);
    const cacheDir = await tempDir();
    const first = await startAgent(spoke.url, ["--cache-dir", cacheDir]);
    const table = await readyTable(first);
    await waitFor(
      async () =>
        decodeCacheFile(await readFile(join(cacheDir, CACHE_FILE_NAME))).imported.length === 2,
      5_000,
      "the cache to be written",
    );
    expect(await first.stop()).toBe(0); // SIGTERM: a clean stop
    await spoke.kill();

    const restarted = await startAgent(spoke.url, ["--cache-dir", cacheDir]);
    // At once: the first requests after it says it serves, without any registrar.
    expect((await restarted.get("/readyz")).status).toBe(200);
    expect((await restarted.get("/routes")).body).toBe(table);
    await restarted.waitForMetric(MODE("poll"), (v) => v === 1);
    await stillServes(restarted, table);
    expect(await restarted.stop()).toBe(0);

    // Corrupt the cache: one flipped byte in the payload.
    const path = join(cacheDir, CACHE_FILE_NAME);
    const bytes = await readFile(path);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 5) ^ 0x20, bytes.length - 5);
    await writeFile(path, bytes);
    const spokeAgain = await startSpoke(prefix);
    const third = await startAgent(spokeAgain.url, ["--cache-dir", cacheDir]);
    await third.waitForMetric(
      'aether_config_agent_cache_errors_total{reason="checksum_mismatch"}',
      (v) => v === 1,
    );
    expect(third.logs.some((l) => l.msg === "last-known cache problem")).toBe(true);
    expect(await readyTable(third)).toBe(table); // from the registrar, not from the cache
    expect(
      (await third.waitForLog((l) => l.msg === "ready: serving a route table")).fromCache,
    ).toBe(false);
    await waitFor(
      async () => {
        decodeCacheFile(await readFile(path));
        return true;
      },
      5_000,
      "a valid cache file again",
    );
  }, 60_000);
});
