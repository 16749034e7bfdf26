/**
 * No silent loss, with real processes: a real etcd, a registrar and an agent
 * connected through it. An origin's keys wiped with a raw etcd client are
 * held by the registrar (still listed, no DELETE on a watch stream, a gauge,
 * a log line, `/readyz` degraded) and the agent keeps its table; the
 * origin's re-export releases the hold; SIGUSR2 releases it as an operator
 * would, and then the deletes are applied, counted and logged everywhere; a
 * rollback is refused (rollback.test.ts has the whole story); and a registrar
 * restarted after a wipe (its hold forgotten) leaves the agent holding its
 * last-known until its own hold runs out.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  ConfigService,
  ConfigView,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import type { ConfigStore } from "../../services/registrar/store/config-store.js";
import { createEtcdStore } from "../../services/registrar/store/etcd-store.js";
import { originKeyPrefix } from "../../services/registrar/store/store-key.js";
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
import { recordWatch, type WatchRecorder } from "../support/watch-recorder.js";

const shared = useSharedEtcd("md");
let prefix: string;
let registrar: RegistrarProcess;
let agent: AgentProcess;
let watch: WatchRecorder;
const stores: ConfigStore[] = [];

/** Each origin's services; the agent depends on all of them. */
const SERVICES = {
  east: ["shop/e0", "shop/e1", "shop/e2", "shop/e3", "shop/e4", "shop/e5"],
  north: ["shop/n0", "shop/n1", "shop/n2", "shop/n3"],
  south: ["shop/t0", "shop/t1", "shop/t2"],
  west: ["shop/w0"],
} as const;
type Origin = keyof typeof SERVICES;

function storeOf(origin: Origin): ConfigStore {
  const store = createEtcdStore({ origin, endpoints: [shared.etcd.endpoint], prefix });
  stores.push(store);
  return store;
}

/** Writes every service of `origin` at version `n`, in one transaction. */
async function exportAll(origin: Origin, n: number): Promise<void> {
  await storeOf(origin).write(
    SERVICES[origin].map((service) => ({
      type: "put",
      projection: makeProjection(service, { version: versionAt(n) }),
    })),
  );
}

/** Deletes every key of `origin` at once, the way `etcdctl del --prefix` does. */
async function wipe(origin: Origin): Promise<void> {
  await shared.raw.delete().prefix(originKeyPrefix(prefix, origin));
}

function startRegistrar(listen?: string): Promise<RegistrarProcess> {
  return startSpokeRegistrar({
    endpoint: shared.etcd.endpoint,
    prefix,
    extra: ["--keepalive", "1s", ...(listen === undefined ? [] : ["--listen", listen])],
  });
}

async function registrarMetric(sample: string): Promise<number> {
  const text = await (await fetch(`${registrar.url}/metrics`)).text();
  return readSample(text, sample) ?? 0;
}

const HELD = (origin: Origin) => `aether_config_import_held_deletes{origin="${origin}"}`;
const DELETES = (origin: Origin) => `aether_config_import_deletes_total{origin="${origin}"}`;
const ROLLBACKS = `aether_config_import_rejections_total{reason="rollback"}`;

/** The services of `origin` in the agent's route table, sorted. */
async function agentHas(origin: Origin): Promise<string[]> {
  return (await agent.routes())
    .filter((e) => e.origin === origin)
    .map((e) => e.service)
    .sort();
}

/** Writes west's projection at version `n` and waits until the watch and the agent have it. */
async function marker(n: number): Promise<void> {
  await storeOf("west").put(makeProjection("shop/w0", { version: versionAt(n) }));
  await watch.until(
    (events) =>
      events.some((e) => e.service === "shop/w0" && e.projection?.version === versionAt(n)),
    10_000,
    `the marker ${n} on the watch`,
  );
  await waitFor(
    async () =>
      (await agent.routes()).some((e) => e.service === "shop/w0" && e.version === versionAt(n)),
    10_000,
    `the marker ${n} at the agent`,
  );
}

const deletesIn = (events: WatchRecorder["events"]) =>
  events
    .filter((e) => e.type === WatchEventType.DELETE)
    .map((e) => `${e.originCluster}/${e.service}`);

beforeAll(async () => {
  prefix = shared.freshPrefix();
  await Promise.all((Object.keys(SERVICES) as Origin[]).map((origin) => exportAll(origin, 1)));
  registrar = await startRegistrar();
  agent = await startAgentProcess([
    "--registrar",
    registrar.url,
    "--cluster",
    "spoke",
    "--deps",
    Object.values(SERVICES).flat().join(","),
    "--mass-delete-hold",
    "3s",
  ]);
  await waitFor(
    async () => (await agent.routes().catch(() => [])).length === 14,
    15_000,
    "the agent's 14 services",
  );
  const client = createClient(
    ConfigService,
    createConnectTransport({ baseUrl: registrar.url, httpVersion: "1.1" }),
  );
  watch = recordWatch(client, { view: ConfigView.ALL_ORIGINS });
  await watch.until((events) => events.some((e) => e.type === WatchEventType.SYNCED));
}, 60_000);
afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
});
afterAll(async () => {
  await watch?.cancel();
  await stopAllAgents();
  await stopAllRegistrars();
});

describe("a mass disappearance of one origin's keys", () => {
  it("is held by the registrar: still listed, no DELETE streamed, gauge, log and /readyz say why; the agent keeps its table; the origin's re-export releases it", async () => {
    await wipe("east");
    await waitFor(
      async () => (await registrarMetric(HELD("east"))) === 6,
      10_000,
      "east's held deletes",
    );
    const listed = await createClient(
      ConfigService,
      createConnectTransport({ baseUrl: registrar.url, httpVersion: "1.1" }),
    ).listAllConfig({ view: ConfigView.ALL_ORIGINS, services: [...SERVICES.east] });
    expect(listed.projections.map((p) => p.originCluster)).toEqual(Array(6).fill("east"));
    await marker(2); // written after the wipe: every event before it has arrived
    expect(deletesIn(watch.events)).toEqual([]);
    expect(await agentHas("east")).toEqual([...SERVICES.east]);
    expect(await agent.metric(DELETES("east"))).toBe(0);
    const readyz = await fetch(`${registrar.url}/readyz`);
    expect(readyz.status).toBe(200);
    expect(await readyz.text()).toMatch(
      /^ready, degraded: 6 deletes of origin east held since \S+ \(6 of its 6 projections deleted in one store revision at revision \d+; threshold more than 50% and at least 3\); still served/,
    );
    const held = registrar.logs.find((l) => String(l.msg).startsWith("holding a mass deletion"));
    expect(held).toMatchObject({ origin: "east", held: 6 });

    // The origin writes one again: that one is no longer held; then all of them: the hold is over.
    await storeOf("east").put(makeProjection("shop/e0", { version: versionAt(3) }));
    await waitFor(async () => (await registrarMetric(HELD("east"))) === 5, 10_000, "5 held");
    await exportAll("east", 3);
    await waitFor(async () => (await registrarMetric(HELD("east"))) === 0, 10_000, "none held");
    await registrar.waitForLog(
      (l) => l.msg === "hold over: the origin wrote every held projection again",
    );
    expect((await (await fetch(`${registrar.url}/readyz`)).text()).trim()).toBe("ready");
    await marker(4);
    expect(deletesIn(watch.events)).toEqual([]);
    expect(await registrarMetric(DELETES("east"))).toBe(0);
    expect(await agentHas("east")).toEqual([...SERVICES.east]);
  }, 60_000);

  it("is released by SIGUSR2: the deletes are then streamed, applied by the agent, counted and logged at both", async () => {
    await wipe("north");
    await waitFor(
      async () => (await registrarMetric(HELD("north"))) === 4,
      10_000,
      "north's held deletes",
    );
    await marker(5);
    expect(await agentHas("north")).toEqual([...SERVICES.north]);
    process.kill(registrar.pid, "SIGUSR2");
    await watch.until((events) => deletesIn(events).length === 4, 10_000, "4 DELETEs");
    expect(deletesIn(watch.events).sort()).toEqual(SERVICES.north.map((s) => `north/${s}`));
    expect(await registrarMetric(HELD("north"))).toBe(0);
    expect(await registrarMetric(DELETES("north"))).toBe(4);
    await registrar.waitForLog(
      (l) => l.msg === "held deletes released by the operator" && l.released === 4,
    );
    await agent.waitForMetric(DELETES("north"), (v) => v === 4);
    expect(await agentHas("north")).toEqual([]);
    expect(agent.logs.some((l) => l.msg === "applied deletes of imported projections")).toBe(true);
    expect(await agent.metric(HELD("north"))).toBe(0);
  }, 60_000);

  it("a rollback (an older version over a newer one) is refused by the registrar: the agent keeps the newer one", async () => {
    const seen = watch.events.length;
    await storeOf("west").put(makeProjection("shop/w0", { version: versionAt(1) })); // the marker left it at 5
    await waitFor(async () => (await registrarMetric(ROLLBACKS)) === 1, 10_000, "the refusal");
    await marker(6); // the watch and the agent are past the refused write
    const after = watch.events.slice(seen).map((e) => `${e.service}@${e.projection?.version}`);
    expect(after).toEqual([`shop/w0@${versionAt(6)}`]);
  }, 30_000);

  it("a registrar restarted after a wipe forgets its hold: the agent holds its last-known, says degraded, and drops it after its own hold", async () => {
    const listen = new URL(registrar.url).host;
    expect(await registrar.stop()).toBe(0);
    await wipe("south");
    registrar = await startRegistrar(listen);
    await agent.waitForMetric(HELD("south"), (v) => v === 3, 15_000);
    expect(await agentHas("south")).toEqual([...SERVICES.south]);
    const readyz = await agent.get("/readyz");
    expect(readyz.status).toBe(200);
    expect(readyz.body).toMatch(
      /^ready, degraded: 3 imported projections held since \S+ \(3 of origin south's 3 imported projections missing from one complete state\)/,
    );
    // The registrar's keep-alives (every second) say it still lacks them; the hold is 3 s.
    await agent.waitForMetric(DELETES("south"), (v) => v === 3, 15_000);
    expect(await agentHas("south")).toEqual([]);
    expect(await agent.metric(HELD("south"))).toBe(0);
    expect((await agent.get("/readyz")).body.trim()).toBe("ready");
    expect(await agentHas("east")).toEqual([...SERVICES.east]);
  }, 60_000);
});
