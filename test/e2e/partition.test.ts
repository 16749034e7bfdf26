/**
 * e2e 3: partition of spoke B. The hub exports a copy of examples/mesh; B's
 * registrar and agent are separate processes over one real etcd. (a) B's
 * registrar is killed (kill -9) while the hub keeps exporting an edit: B's
 * agent serves the full last-known table, its import age grows, and once
 * the registrar is back on the same address the agent converges to the
 * hub's current config without a restart. (b) etcd is frozen (SIGSTOP:
 * connections hang rather than fail) and B's agent is restarted during the
 * freeze: it is ready with its cached table at once, its stream is served
 * B's registrar's retained view (flagged as such), and after the thaw an
 * edit on the hub reaches it.
 *
 * The real cut between network namespaces is in netns-partition.test.ts.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CACHE_FILE_NAME, decodeCacheFile } from "../../clients/agent/last-known-cache.js";
import { MESH_RECORD } from "../../services/common/service-name.js";
import { type AgentProcess, startAgentProcess, stopAllAgents } from "../support/agent-process.js";
import {
  agentVersions,
  convergedTo,
  EXAMPLES,
  editCanaryOnHub,
  effectiveVersions,
  sameVersions,
  startClusterRegistrar,
  type TempCopy,
  tempCopy,
} from "../support/e2e-cluster.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("e2e3-");
const DEPS = ["identity/users", "payments/ledger", "shop/cart", "shop/checkout"];
const AGE = "aether_config_import_age_max_seconds";
const MODE = (mode: string) => `aether_config_agent_mode{mode="${mode}"}`;

let prefix: string;
let mesh: TempCopy | undefined;
let cacheDir: string | undefined;
let hub: RegistrarProcess;
let spokeB: RegistrarProcess;
/** B's registrar address, fixed when it first starts and reused on every restart. */
let spokeBListen: string;
let agentB: AgentProcess;

function startSpokeB(extra: string[] = []): Promise<RegistrarProcess> {
  return startClusterRegistrar({
    endpoint: shared.etcd.endpoint,
    prefix,
    cluster: "west",
    controlCluster: "hub",
    // Keep-alives every second: its streams say soon that the store is away.
    extra: ["--keepalive", "1s", ...extra],
  });
}

function startAgentB(): Promise<AgentProcess> {
  return startAgentProcess([
    "--registrar",
    `http://${spokeBListen}`,
    "--cluster",
    "west",
    "--control-cluster",
    "hub",
    "--deps",
    DEPS.join(","),
    "--cache-dir",
    cacheDir as string,
    "--poll-interval",
    "200ms",
    "--backoff-max",
    "300ms",
  ]);
}

/** The version of every service at the hub (its EFFECTIVE view), by service. */
const hubVersions = () => effectiveVersions(hub.url, DEPS);

/** Waits until the agent holds exactly the hub's current version of every service. */
const convergedToHub = (agent: AgentProcess, what: string, timeoutMs?: number) =>
  convergedTo(hub.url, DEPS, agent, what, timeoutMs);

/** Edits the checkout canary on the hub and resolves with the new stored version. */
const editOnHub = (stable: number, canary: number) =>
  editCanaryOnHub(shared.raw, prefix, (mesh as TempCopy).path, stable, canary);

beforeAll(async () => {
  prefix = shared.freshPrefix();
  mesh = await tempCopy(join(EXAMPLES, "mesh"));
  cacheDir = await mkdtemp(join(tmpdir(), "aether-e2e3-cache-"));
  [hub, spokeB] = await Promise.all([
    startClusterRegistrar({
      endpoint: shared.etcd.endpoint,
      prefix,
      cluster: "hub",
      controlCluster: "hub",
      exportDir: mesh.path,
    }),
    startSpokeB(),
  ]);
  spokeBListen = new URL(spokeB.url).host;
  agentB = await startAgentB();
  await agentB.waitUntilReady();
  await convergedToHub(agentB, "spoke B's agent to hold the hub's four services");
}, 60_000);
afterAll(async () => {
  try {
    await shared.etcd.resume();
  } finally {
    await stopAllAgents();
    await stopAllRegistrars();
    await mesh?.remove();
    if (cacheDir !== undefined) await rm(cacheDir, { recursive: true, force: true });
  }
});

describe("e2e 3: partition of spoke B", () => {
  it("B's registrar killed: B's agent keeps the full last-known table while the hub exports an edit, import_age_max grows, and when the registrar returns the agent converges to the hub's new version without a restart", async () => {
    const table = (await agentB.get("/routes")).body;
    const old = await agentVersions(agentB);
    expect(Object.keys(old).sort()).toEqual(DEPS);
    const pid = agentB.pid;

    await spokeB.kill();
    await agentB.waitForMetric(MODE("poll"), (v) => v === 1);
    const edited = await editOnHub(50, 50); // the hub and etcd are fine: the store moves on
    expect(edited).not.toBe(old["shop/checkout"]);
    expect((await hubVersions())["shop/checkout"]).toBe(edited);

    // Cut off: the agent serves exactly what it had, nothing lost, and still says ready.
    expect((await agentB.get("/routes")).body).toBe(table);
    expect((await agentB.get("/readyz")).status).toBe(200);
    const age = await agentB.metric(AGE);
    expect(age).toBeGreaterThan(0);
    const older = await agentB.waitForMetric(AGE, (v) => v > age, 5_000);
    expect(older).toBeGreaterThan(age);
    expect((await agentB.get("/routes")).body).toBe(table);

    // The cut heals: B's registrar again, on the address the agent knows.
    spokeB = await startSpokeB(["--listen", spokeBListen]);
    const converged = await convergedToHub(agentB, "spoke B's agent to take the hub's edit");
    expect(converged["shop/checkout"]).toBe(edited);
    for (const s of DEPS.filter((s) => s !== "shop/checkout")) expect(converged[s]).toBe(old[s]);
    await agentB.waitForMetric(MODE("watch"), (v) => v === 1);
    expect(agentB.pid).toBe(pid);
    expect(agentB.logs.filter((l) => l.msg === "agent serving")).toHaveLength(1);
  });

  it("etcd frozen (SIGSTOP): B's agent keeps its table; restarted during the freeze it is ready with the cached table at once; after the thaw a hub edit reaches it", async () => {
    await agentB.waitForMetric(MODE("watch"), (v) => v === 1);
    const table = (await agentB.get("/routes")).body;
    // The table's services and its mesh defaults, which the cache keeps as the mesh record.
    const meshVersion = (JSON.parse(table) as { meshDefaults?: { version: string } }).meshDefaults
      ?.version;
    expect(meshVersion).toBeDefined();
    const versions = { ...(await agentVersions(agentB)), [MESH_RECORD]: meshVersion as string };
    const cachePath = join(cacheDir as string, CACHE_FILE_NAME);
    await waitFor(
      async () => {
        const cached = decodeCacheFile(await readFile(cachePath));
        const cachedVersions = cached.imported.map((c) => [c.service, c.projection.version]);
        return sameVersions(Object.fromEntries(cachedVersions), versions);
      },
      5_000,
      "the agent's cache to hold its current table",
    );

    await shared.etcd.pause();
    try {
      expect((await agentB.get("/routes")).body).toBe(table);
      expect((await agentB.get("/readyz")).status).toBe(200);

      expect(await agentB.stop()).toBe(0);
      agentB = await startAgentB();
      // At once: the first requests after it says it serves, from its own cache (B's
      // registrar cannot answer a list while etcd is frozen).
      const [ready, routes] = await Promise.all([agentB.get("/readyz"), agentB.get("/routes")]);
      expect(ready.status).toBe(200);
      expect(routes.body).toBe(table);
      const readyLine = await agentB.waitForLog((l) => l.msg === "ready: serving a route table");
      expect(readyLine.fromCache).toBe(true);
      expect(await agentB.metric('aether_config_agent_polls_total{result="ok"}')).toBe(0);
      // Its stream is served B's registrar's retained view, which says the store is away.
      await agentB.waitForMetric(
        "aether_config_agent_registrar_store_unavailable",
        (v) => v === 1,
        15_000,
      );
      expect(await agentB.metric(MODE("watch"))).toBe(1);
      expect((await agentB.get("/routes")).body).toBe(table);
    } finally {
      await shared.etcd.resume();
    }

    const edited = await editOnHub(70, 30);
    const converged = await convergedToHub(agentB, "the post-thaw edit at the restarted agent");
    expect(converged["shop/checkout"]).toBe(edited);
    expect(Object.keys(converged).sort()).toEqual(DEPS);
  });
});
