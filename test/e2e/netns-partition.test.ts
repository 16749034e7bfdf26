/**
 * e2e 3, a real cut between network namespaces (issue 5, scenario 3). Spoke
 * B's registrar runs inside a network namespace of the test, joined to the
 * root namespace by a veth pair; it reaches the shared etcd (127.0.0.1 of
 * the root namespace) through a TCP forwarder on the veth's root address.
 * The hub registrar (exporting a copy of examples/mesh) and B's agent run
 * in the root namespace. The cut sets the namespace end of the veth down:
 * packets are dropped and connections hang rather than fail. B's agent
 * keeps serving its full table, detects the dead stream by keep-alive
 * timeout, and its import age grows while the hub exports an edit; after
 * the heal it converges to the hub's new version without a restart.
 *
 * Needs root (`ip netns add`); without it the suite fails saying so.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentProcess, startAgentProcess, stopAllAgents } from "../support/agent-process.js";
import {
  agentVersions,
  convergedTo,
  EXAMPLES,
  editCanaryOnHub,
  effectiveVersions,
  startClusterRegistrar,
  type TempCopy,
  tempCopy,
} from "../support/e2e-cluster.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { createNetns, forwardTcp, type Netns, type TcpForwarder } from "../support/netns.js";
import {
  type RegistrarProcess,
  startRegistrarProcess,
  stopAllRegistrars,
} from "../support/registrar-process.js";

const shared = useSharedEtcd("e2e3ns-");
const DEPS = ["identity/users", "payments/ledger", "shop/cart", "shop/checkout"];
const AGE = "aether_config_import_age_max_seconds";
const MODE = (mode: string) => `aether_config_agent_mode{mode="${mode}"}`;
const KEEPALIVES = 'aether_config_agent_stream_events_total{type="keepalive"}';

let prefix: string;
let netns: Netns | undefined;
let forwarder: TcpForwarder | undefined;
let mesh: TempCopy | undefined;
let cacheDir: string | undefined;
let hub: RegistrarProcess;
let spokeB: RegistrarProcess;
let agentB: AgentProcess;

/** The version of every service at the hub (its EFFECTIVE view), by service. */
const hubVersions = () => effectiveVersions(hub.url, DEPS);

/** Waits until the agent holds exactly the hub's current version of every service. */
const convergedToHub = (agent: AgentProcess, what: string, timeoutMs?: number) =>
  convergedTo(hub.url, DEPS, agent, what, timeoutMs);

/** Edits the checkout canary on the hub and resolves with the new stored version. */
const editOnHub = (stable: number, canary: number) =>
  editCanaryOnHub(shared.raw, prefix, (mesh as TempCopy).path, stable, canary);

beforeAll(async () => {
  try {
    netns = await createNetns("b");
  } catch (error) {
    throw new Error(
      `this suite needs network namespaces (run it as root with iproute2): ${(error as Error).message}`,
    );
  }
  prefix = shared.freshPrefix();
  mesh = await tempCopy(join(EXAMPLES, "mesh"));
  cacheDir = await mkdtemp(join(tmpdir(), "aether-e2e3ns-cache-"));
  forwarder = await forwardTcp(netns.hostAddr, shared.etcd.endpoint);
  [hub, spokeB] = await Promise.all([
    startClusterRegistrar({
      endpoint: shared.etcd.endpoint,
      prefix,
      cluster: "hub",
      controlCluster: "hub",
      exportDir: mesh.path,
    }),
    startRegistrarProcess(
      [
        "--cluster",
        "west",
        "--control-cluster",
        "hub",
        "--store",
        "etcd",
        "--etcd-endpoints",
        `http://${forwarder.address}`,
        "--etcd-prefix",
        prefix,
        "--store-timeout",
        "1s",
        "--election-ttl",
        "2s",
        "--keepalive",
        "200ms",
        "--listen",
        `${netns.nsAddr}:0`,
      ],
      { commandPrefix: netns.exec },
    ),
  ]);
  expect(new URL(spokeB.url).hostname).toBe(netns.nsAddr);
  agentB = await startAgentProcess([
    "--registrar",
    spokeB.url,
    "--cluster",
    "west",
    "--control-cluster",
    "hub",
    "--deps",
    DEPS.join(","),
    "--cache-dir",
    cacheDir,
    "--keepalive-timeout",
    "1s",
    "--poll-interval",
    "200ms",
    "--backoff-initial",
    "100ms",
    "--backoff-max",
    "300ms",
  ]);
  await agentB.waitUntilReady();
  await convergedToHub(agentB, "spoke B's agent to hold the hub's four services");
}, 60_000);

afterAll(async () => {
  try {
    await stopAllAgents();
    await stopAllRegistrars();
    await forwarder?.close();
  } finally {
    await netns?.remove();
    await mesh?.remove();
    if (cacheDir !== undefined) await rm(cacheDir, { recursive: true, force: true });
  }
});

describe("e2e 3: a real cut between network namespaces", () => {
  it("B's registrar behind a cut veth: B's agent keeps its full table, detects the dead stream by keep-alive timeout, import_age_max grows while the hub exports an edit, and after the heal it converges without a restart", async () => {
    await agentB.waitForMetric(MODE("watch"), (v) => v === 1);
    // The stream is alive: keep-alives (every 200 ms) cross the veth.
    const keepalives = await agentB.metric(KEEPALIVES);
    await agentB.waitForMetric(KEEPALIVES, (v) => v > keepalives, 5_000);
    const table = (await agentB.get("/routes")).body;
    const old = await agentVersions(agentB);
    expect(Object.keys(old).sort()).toEqual(DEPS);
    const pid = agentB.pid;
    const ns = netns as Netns;

    const cutAt = Date.now();
    await ns.cut();
    try {
      // Nothing refuses: the stream just goes silent, and the agent's watchdog calls it dead.
      const dead = await agentB.waitForLog(
        (l) =>
          l.msg === "stream failed; keeping the last-known config" &&
          String(l.err).includes("keep-alive timeout"),
        10_000,
      );
      expect(String(dead.err)).toContain("keep-alive timeout");
      expect(Date.now() - cutAt).toBeGreaterThanOrEqual(900);
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
      expect(await agentVersions(agentB)).toEqual(old);
    } finally {
      await ns.heal();
    }

    // Healed: the same agent process converges to the hub's current config.
    const converged = await convergedToHub(
      agentB,
      "spoke B's agent to take the hub's edit after the heal",
      30_000,
    );
    expect(converged["shop/checkout"]).not.toBe(old["shop/checkout"]);
    for (const s of DEPS.filter((s) => s !== "shop/checkout")) expect(converged[s]).toBe(old[s]);
    await agentB.waitForMetric(MODE("watch"), (v) => v === 1, 30_000);
    expect(agentB.pid).toBe(pid);
    expect(agentB.logs.filter((l) => l.msg === "agent serving")).toHaveLength(1);
  }, 90_000);
});
