/**
 * Rollback refused, with real processes: a real etcd, a spoke registrar and
 * an agent with a last-known cache. The exact stored bytes of an origin's
 * older projection, written back under its key with a raw etcd client, are
 * refused as `rollback` by the registrar (GetConfigStatus, the rejection
 * metric, aetherctl status) while it keeps serving the newer one; a
 * restarted registrar forgets its marks and serves the old value, and the
 * agent refuses it end to end, also after it restarts, and also after the
 * projection was deleted (its marks live in its cache file). No signatures
 * are involved: the old value is written back raw.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigService, ConfigView } from "../../gen/aether/registry/v1/config_service_pb.js";
import type { ConfigStore } from "../../services/registrar/store/config-store.js";
import { createEtcdStore } from "../../services/registrar/store/etcd-store.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import { runAetherctlInProcess } from "../support/aetherctl-in-process.js";
import {
  type AgentProcess,
  readSample,
  startAgentProcess,
  startSpokeRegistrar,
  stopAllAgents,
} from "../support/agent-process.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("rb");
const ROLLBACKS = `aether_config_import_rejections_total{reason="rollback"}`;
let prefix: string;
let hub: ConfigStore;
let registrar: RegistrarProcess;
let agent: AgentProcess;
let cacheDir: string;
/** The exact stored bytes of hub's shop/a at version 1. */
let oldBytes: Buffer;

const key = () => projectionKey(prefix, "hub", "shop/a");

/** Writes the old bytes back under hub's shop/a key, exactly as stored. */
async function replay(): Promise<void> {
  await shared.raw.put(key()).value(oldBytes);
}

function startRegistrar(listen?: string): Promise<RegistrarProcess> {
  return startSpokeRegistrar({
    endpoint: shared.etcd.endpoint,
    prefix,
    extra: ["--keepalive", "1s", ...(listen === undefined ? [] : ["--listen", listen])],
  });
}

function startAgent(): Promise<AgentProcess> {
  return startAgentProcess([
    ...["--registrar", registrar.url, "--cluster", "spoke", "--deps", "shop/a,shop/b"],
    ...["--cache-dir", cacheDir],
  ]);
}

async function registrarMetric(sample: string): Promise<number> {
  const text = await (await fetch(`${registrar.url}/metrics`)).text();
  return readSample(text, sample) ?? 0;
}

const client = () =>
  createClient(
    ConfigService,
    createConnectTransport({ baseUrl: registrar.url, httpVersion: "1.1" }),
  );

/** The version of `service` in the agent's route table, or undefined. */
async function agentVersion(service: string): Promise<string | undefined> {
  return (await agent.routes()).find((e) => e.service === service)?.version;
}

/** The version of hub's shop/a the registrar serves to every origin's view. */
async function servedVersion(): Promise<string | undefined> {
  const listed = await client().listAllConfig({
    view: ConfigView.ALL_ORIGINS,
    services: ["shop/a"],
  });
  return listed.projections[0]?.version;
}

beforeAll(async () => {
  prefix = shared.freshPrefix();
  cacheDir = await mkdtemp(join(tmpdir(), "aether-rollback-"));
  hub = createEtcdStore({ origin: "hub", endpoints: [shared.etcd.endpoint], prefix });
  await hub.put(makeProjection("shop/a", { version: versionAt(1) }));
  await hub.put(makeProjection("shop/b", { version: versionAt(1) }));
  oldBytes = (await shared.raw.get(key()).buffer()) as Buffer;
  await hub.put(makeProjection("shop/a", { version: versionAt(2) }));
  registrar = await startRegistrar();
  agent = await startAgent();
  await waitFor(async () => (await agentVersion("shop/a")) === versionAt(2), 15_000, "v2");
}, 60_000);
afterAll(async () => {
  await stopAllAgents();
  await stopAllRegistrars();
  await hub?.close();
  if (cacheDir !== undefined) await rm(cacheDir, { recursive: true, force: true });
});

describe("rollback refused", () => {
  it("the spoke registrar refuses the old bytes written back: rejection `rollback` in status, metric and aetherctl; it keeps serving the newer", async () => {
    await replay();
    await waitFor(async () => (await registrarMetric(ROLLBACKS)) === 1, 10_000, "the refusal");
    const status = await client().getConfigStatus({});
    expect(status.rejections.map((r) => [r.service, r.originCluster, r.reason])).toEqual([
      ["shop/a", "hub", "rollback"],
    ]);
    expect(status.rejections[0]?.message).toContain(`older than ${versionAt(2)}`);
    expect(await servedVersion()).toBe(versionAt(2));
    const ctl = await runAetherctlInProcess(["status", "--registrar", registrar.url]);
    expect(ctl.stdout).toMatch(/shop\/a\s+hub\s+rollback/);
    // A later change reaches the agent: the refused write never did.
    await hub.put(makeProjection("shop/b", { version: versionAt(3) }));
    await waitFor(async () => (await agentVersion("shop/b")) === versionAt(3), 10_000, "b@3");
    expect(await agentVersion("shop/a")).toBe(versionAt(2));
    expect(await agent.metric(ROLLBACKS)).toBe(0);
  }, 30_000);

  it("a restarted registrar forgets its marks and serves the store's old value; written again, the agent refuses it and keeps the newer", async () => {
    const listen = new URL(registrar.url).host;
    expect(await registrar.stop()).toBe(0);
    registrar = await startRegistrar(listen);
    expect(await servedVersion()).toBe(versionAt(1));
    expect(await registrarMetric(ROLLBACKS)).toBe(0);
    // The agent resumed past the refused write; the replay written again reaches it.
    await replay();
    await agent.waitForMetric(ROLLBACKS, (v) => v === 1, 15_000);
    expect(await registrarMetric(ROLLBACKS)).toBe(0); // equal to the v1 this registrar listed
    expect(await agentVersion("shop/a")).toBe(versionAt(2));
  }, 30_000);

  it("a restarted agent still refuses it", async () => {
    expect(await agent.stop()).toBe(0);
    agent = await startAgent();
    expect(await agentVersion("shop/a")).toBe(versionAt(2)); // from its cache
    await replay();
    await agent.waitForMetric(ROLLBACKS, (v) => v === 1, 15_000);
    expect(await agentVersion("shop/a")).toBe(versionAt(2));
  }, 30_000);

  it("after a delete the old value is still refused, also by an agent restarted with no projection of it left (its marks are in its cache file)", async () => {
    await shared.raw.delete().key(key());
    await waitFor(async () => (await agentVersion("shop/a")) === undefined, 10_000, "deleted");
    await replay();
    await agent.waitForMetric(ROLLBACKS, (v) => v === 2, 10_000);
    expect(await servedVersion()).toBe(versionAt(1));
    expect(await agentVersion("shop/a")).toBeUndefined();
    expect(await agent.stop()).toBe(0);
    const file = await readFile(join(cacheDir, "routes-cache.v1"), "utf8");
    expect(file).toContain(`{"origin":"hub","service":"shop/a","version":"${versionAt(2)}"}`);
    agent = await startAgent();
    await replay();
    await agent.waitForMetric(ROLLBACKS, (v) => v === 1, 15_000);
    expect(await agentVersion("shop/a")).toBeUndefined();
  }, 40_000);

  it("a newer version is taken by the registrar and the agent", async () => {
    await hub.put(makeProjection("shop/a", { version: versionAt(5) }));
    await waitFor(async () => (await agentVersion("shop/a")) === versionAt(5), 10_000, "v5");
    expect(await servedVersion()).toBe(versionAt(5));
    expect((await client().getConfigStatus({})).rejections).toEqual([]);
  }, 30_000);
});
