/**
 * The agent as an OS process against real processes: a real etcd, a hub
 * registrar exporting a manifest directory, a spoke registrar, and the
 * agent. Demand scoping (checked on the wire), push through the stream,
 * trust and conflicts re-checked in the agent, local routes winning, the
 * dependency file, and poll mode.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, fromBinary, toBinary, toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  ConfigService,
  ConfigView,
  WatchConfigResponseSchema,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import type { ConfigStore } from "../../services/registrar/store/config-store.js";
import { createEtcdStore } from "../../services/registrar/store/etcd-store.js";
import {
  type AgentProcess,
  startAgentProcess,
  startSpokeRegistrar,
  stopAllAgents,
} from "../support/agent-process.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import {
  readRawProjections,
  setCanaryWeights,
  startExportRegistrar,
} from "../support/export-store.js";
import { copyExportFixtures, type FixtureDir } from "../support/memory-source.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("ag");
const cleanups: (() => Promise<void>)[] = [];
/** Cleanups that run after the last test (the shared registrars' fixtures). */
const finalCleanups: (() => Promise<void>)[] = [];

/**
 * One hub (exporting a copy of the export fixtures) and one federated spoke
 * for the whole file: starting processes is what costs time here. Tests
 * use distinct services, or assert relative to what they find.
 */
let prefix: string;
let hubDir: string;
let spoke: RegistrarProcess;

beforeAll(async () => {
  prefix = shared.freshPrefix();
  const fixtures: FixtureDir = await copyExportFixtures();
  finalCleanups.push(() => fixtures.remove());
  hubDir = fixtures.path;
  // A long keep-alive, so that nothing but real changes crosses the wire in the tests.
  [spoke] = await Promise.all([
    startSpokeRegistrar({ endpoint: shared.etcd.endpoint, prefix, extra: ["--keepalive", "60s"] }),
    startExportRegistrar({ endpoint: shared.etcd.endpoint, prefix, dir: hubDir }),
  ]);
  await waitFor(
    async () => (await readRawProjections(shared.raw, prefix, "hub")).size === 3,
    15_000,
    "the hub's three exports",
  );
}, 60_000);
afterEach(async () => {
  await stopAllAgents();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await stopAllAgents();
  await stopAllRegistrars();
  for (const cleanup of finalCleanups.splice(0)) await cleanup();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "aether-agent-"));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function startAgent(registrar: string, extra: string[]): Promise<AgentProcess> {
  return startAgentProcess(["--registrar", registrar, "--cluster", "spoke", ...extra]);
}

function storeOf(origin: string): ConfigStore {
  const store = createEtcdStore({ origin, endpoints: [shared.etcd.endpoint], prefix });
  cleanups.push(() => store.close());
  return store;
}

/** `service origin source` of every route table entry. */
async function summary(agent: AgentProcess): Promise<string[]> {
  return (await agent.routes()).map((e) => `${e.service} ${e.origin} ${e.source}`);
}

/** The canary weights of shop/checkout's first rule in the agent's table, joined by commas. */
async function canaryWeights(agent: AgentProcess): Promise<string | undefined> {
  const entry = (await agent.routes()).find((e) => e.service === "shop/checkout");
  return entry?.projection.routes?.[0]?.rules?.[0]?.backends?.map((b) => b.weight).join();
}

const EVENTS = (type: string) => `aether_config_agent_stream_events_total{type="${type}"}`;
const BYTES = 'aether_config_agent_received_bytes_total{method="WatchConfig"}';
const POLLS_OK = 'aether_config_agent_polls_total{result="ok"}';
const APPLIES = "aether_config_agent_apply_seconds_count";
const POLLS_ERROR = 'aether_config_agent_polls_total{result="error"}';

describe("agent against real registrars", () => {
  it("holds exactly its dependency set with hub-authored routes; a hub edit arrives through the stream, an edit outside the set sends nothing", async () => {
    const dir = hubDir;
    const out = join(await tempDir(), "routes.json");
    const agent = await startAgent(spoke.url, [
      "--control-cluster",
      "hub",
      "--deps",
      "shop/checkout,payments/ledger",
      "--out",
      out,
    ]);
    await agent.waitUntilReady();
    expect(await summary(agent)).toEqual([
      "payments/ledger hub imported",
      "shop/checkout hub imported",
    ]);
    const stored = await readRawProjections(shared.raw, prefix, "hub");
    for (const entry of await agent.routes()) {
      const projection = stored.get(entry.service)?.projection;
      expect(projection).toBeDefined();
      expect(entry.projection).toEqual(toJson(ServiceConfigProjectionSchema, projection as never));
      expect(entry.version).toBe(projection?.version);
    }
    // --out is written after the table is served: wait for the write, then compare.
    const served = (await agent.get("/routes")).body;
    await waitFor(
      async () => (await readFile(out, "utf8").catch(() => "")) === served,
      5_000,
      "--out to hold the served table",
    );
    expect(await agent.metric('aether_config_agent_mode{mode="watch"}')).toBe(1);

    const before = {
      upserts: await agent.metric(EVENTS("upsert")),
      snapshots: await agent.metric(EVENTS("snapshot")),
      bytes: await agent.metric(BYTES),
      polls: (await agent.metric(POLLS_OK)) + (await agent.metric(POLLS_ERROR)),
      applies: await agent.metric(APPLIES),
    };
    // An edit outside the set: web/frontend gets a route; the hub exports a new version of it.
    const frontendBefore = stored.get("web/frontend")?.projection.version;
    await writeFile(
      join(dir, "web/frontend-route.yaml"),
      [
        "apiVersion: gateway.networking.k8s.io/v1",
        "kind: HTTPRoute",
        "metadata: {name: frontend-default, namespace: web}",
        "spec:",
        '  parentRefs: [{group: "", kind: Service, name: frontend, port: 80}]',
        "  rules: [{backendRefs: [{name: frontend, port: 80}]}]",
        "",
      ].join("\n"),
    );
    await waitFor(
      async () =>
        (await readRawProjections(shared.raw, prefix, "hub")).get("web/frontend")?.projection
          .version !== frontendBefore,
      10_000,
      "the hub to export the edit of web/frontend",
    );
    // An edit inside the set, after it: when it has arrived, anything sent before it has too.
    await setCanaryWeights(dir, 80, 20);
    await waitFor(async () => (await canaryWeights(agent)) === "80,20", 10_000, "the hub edit");
    const checkout = (await readRawProjections(shared.raw, prefix, "hub")).get("shop/checkout");
    const expectedEventBytes = toBinary(
      WatchConfigResponseSchema,
      create(WatchConfigResponseSchema, {
        type: WatchEventType.UPSERT,
        projection: fromBinary(ServiceConfigProjectionSchema, checkout?.bytes as Uint8Array),
        service: "shop/checkout",
        originCluster: "hub",
        revision: BigInt(checkout?.modRevision ?? 0),
      }),
    ).byteLength;
    expect(await agent.metric(EVENTS("upsert"))).toBe(before.upserts + 1);
    expect(await agent.metric(EVENTS("snapshot"))).toBe(before.snapshots);
    // The agent's share of the change (received → applied): one observation for the one event.
    expect(await agent.metric(APPLIES)).toBe(before.applies + 1);
    expect(await agent.metric(BYTES)).toBe(before.bytes + expectedEventBytes); // nothing else on the wire
    expect((await agent.metric(POLLS_OK)) + (await agent.metric(POLLS_ERROR))).toBe(before.polls);
    expect(
      await agent.metric("aether_config_propagation_lag_seconds_count"),
    ).toBeGreaterThanOrEqual(1);
    expect(await summary(agent)).toEqual([
      "payments/ledger hub imported",
      "shop/checkout hub imported",
    ]);
    await waitFor(
      async () => (await readFile(out, "utf8")).includes('"weight": 80'),
      5_000,
      "--out",
    );
  }, 60_000);

  it("control-cluster mode: a projection from another origin with a higher version is rejected, counted, not applied", async () => {
    const agent = await startAgent(spoke.url, [
      "--control-cluster",
      "hub",
      "--deps",
      "shop/checkout",
    ]);
    await agent.waitUntilReady();
    const hubVersion = (await agent.routes())[0]?.version;
    const rejected = 'aether_config_import_rejections_total{reason="untrusted_origin"}';
    expect(await agent.metric(rejected)).toBe(0);
    const rogue = storeOf("rogue");
    await rogue.put(
      makeProjection("shop/checkout", {
        version: "2099-01-01T00:00:00.000000000Z",
        backend: "rogue/sink",
      }),
    );
    cleanups.push(async () => {
      await rogue.delete("shop/checkout");
    });
    await agent.waitForMetric(rejected, (v) => v === 1);
    expect(await summary(agent)).toEqual(["shop/checkout hub imported"]);
    expect((await agent.routes())[0]?.version).toBe(hubVersion);
    expect(agent.logs.some((l) => String(l.msg).includes("only the control cluster"))).toBe(true);
  }, 30_000);

  it("federated mode: two origins for one service resolve to the registrar's EFFECTIVE winner, through every change", async () => {
    const east = storeOf("east");
    const west = storeOf("west");
    await east.put(makeProjection("shop/a", { version: versionAt(5) }));
    await west.put(makeProjection("shop/a", { version: versionAt(3) }));
    await east.put(makeProjection("shop/b", { version: versionAt(4) })); // a tie: east < west wins
    await west.put(makeProjection("shop/b", { version: versionAt(4) }));
    const client = createClient(
      ConfigService,
      createConnectTransport({ baseUrl: spoke.url, httpVersion: "1.1" }),
    );
    const agent = await startAgent(spoke.url, ["--deps", "shop/a,shop/b"]);
    const agrees = async () => {
      const effective = await client.listAllConfig({
        services: ["shop/a", "shop/b"],
        view: ConfigView.EFFECTIVE,
      });
      const expected = effective.projections.map(
        (p) => `${p.service} ${p.originCluster} ${p.version}`,
      );
      const actual = (await agent.routes()).map((e) => `${e.service} ${e.origin} ${e.version}`);
      return JSON.stringify(actual) === JSON.stringify(expected) ? expected : undefined;
    };
    await waitFor(async () => (await agrees()) !== undefined, 10_000, "agreement");
    expect(await agrees()).toEqual([`shop/a east ${versionAt(5)}`, `shop/b east ${versionAt(4)}`]);
    await west.put(makeProjection("shop/a", { version: versionAt(9) }));
    await waitFor(
      async () => (await agrees())?.[0] === `shop/a west ${versionAt(9)}`,
      10_000,
      "west wins",
    );
    await west.delete("shop/a");
    await waitFor(
      async () => (await agrees())?.[0] === `shop/a east ${versionAt(5)}`,
      10_000,
      "east again",
    );
    expect(await agent.metric(POLLS_OK)).toBe(0);
  }, 30_000);

  it("a local route overrides the imported one for its service, and removing it restores the imported one", async () => {
    const local = await tempDir();
    const routeFile = join(local, "checkout-local.yaml");
    await writeFile(
      join(local, "services.yaml"),
      [
        "apiVersion: v1",
        "kind: Service",
        "metadata: {name: checkout, namespace: shop}",
        "spec: {ports: [{name: http, port: 80}]}",
        "---",
        "apiVersion: v1",
        "kind: Service",
        "metadata: {name: checkout-v2, namespace: shop}",
        "spec: {ports: [{name: http, port: 80}]}",
        "",
      ].join("\n"),
    );
    await writeFile(
      routeFile,
      [
        "apiVersion: gateway.networking.k8s.io/v1",
        "kind: HTTPRoute",
        "metadata: {name: checkout-local, namespace: shop}",
        "spec:",
        '  parentRefs: [{group: "", kind: Service, name: checkout, port: 80}]',
        "  rules: [{backendRefs: [{name: checkout-v2, port: 80}]}]",
        "",
      ].join("\n"),
    );
    const agent = await startAgent(spoke.url, [
      "--deps",
      "shop/checkout,payments/ledger",
      "--local-source",
      `dir:${local}`,
    ]);
    await agent.waitUntilReady();
    await waitFor(
      async () => (await summary(agent)).includes("shop/checkout spoke local"),
      10_000,
      "the local route",
    );
    const entry = (await agent.routes()).find((e) => e.service === "shop/checkout");
    expect(entry?.version).toMatch(/^sha256:/);
    expect(entry?.projection.routes?.map((r) => r.name)).toEqual(["checkout-local"]);
    expect(await summary(agent)).toEqual([
      "payments/ledger hub imported",
      "shop/checkout spoke local",
    ]);
    await rm(routeFile);
    await waitFor(
      async () => (await summary(agent)).includes("shop/checkout hub imported"),
      10_000,
      "the imported config back",
    );
    expect(await agent.metric('aether_config_agent_route_table_services{source="local"}')).toBe(0);
  }, 30_000);

  it("follows its dependency file: a new set re-subscribes with a fresh snapshot, a bad entry is reported and ignored", async () => {
    const depsFile = join(await tempDir(), "deps");
    await writeFile(depsFile, "shop/checkout\n");
    const agent = await startAgent(spoke.url, ["--deps-file", depsFile]);
    await agent.waitUntilReady();
    expect(await summary(agent)).toEqual(["shop/checkout hub imported"]);
    const snapshots = await agent.metric(EVENTS("snapshot"));
    await writeFile(depsFile, "shop/checkout\npayments/ledger # the ledger\nNot/Valid\n");
    await waitFor(
      async () => (await agent.routes()).length === 2,
      10_000,
      "payments/ledger in the table",
    );
    expect(await summary(agent)).toEqual([
      "payments/ledger hub imported",
      "shop/checkout hub imported",
    ]);
    expect(await agent.metric(EVENTS("snapshot"))).toBe(snapshots + 2); // a fresh snapshot of both
    expect(await agent.metric("aether_config_agent_dependency_problems")).toBe(1);
    expect(await agent.metric("aether_config_stream_reconnects_total")).toBe(0);
    expect(agent.logs.some((l) => String(l.msg).startsWith("dependency file entry ignored"))).toBe(
      true,
    );
    await writeFile(depsFile, "payments/ledger\n");
    await waitFor(async () => (await agent.routes()).length === 1, 10_000, "the set to shrink");
    expect(await summary(agent)).toEqual(["payments/ledger hub imported"]);
  }, 30_000);

  it("--mode poll only polls: changes arrive by ListAllConfig and no stream is opened", async () => {
    const agent = await startAgent(spoke.url, [
      "--deps",
      "shop/checkout",
      "--mode",
      "poll",
      "--poll-interval",
      "200ms",
    ]);
    await agent.waitUntilReady();
    expect(await agent.metric('aether_config_agent_mode{mode="poll"}')).toBe(1);
    await setCanaryWeights(hubDir, 50, 50);
    await waitFor(async () => (await canaryWeights(agent)) === "50,50", 10_000, "the polled edit");
    expect(await agent.metric(POLLS_OK)).toBeGreaterThanOrEqual(2);
    expect(await agent.metric(BYTES)).toBe(0);
    expect(await agent.metric(EVENTS("synced"))).toBe(0);
  }, 30_000);
});
