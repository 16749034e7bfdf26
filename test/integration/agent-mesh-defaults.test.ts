/**
 * The agent and the mesh record (`@mesh`, an origin's MeshConfig), with
 * hand-built records in an in-process registrar on a real socket: the agent
 * follows it without being asked (its dependency set stays the user's), its
 * table's meshDefaults follows an edit and a removal, a restart serves it
 * from the last-known cache, an empty dependency set follows nothing, and
 * an origin the agent does not trust is rejected like any projection.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Agent, type AgentOptions, createAgent } from "../../clients/agent/agent.js";
import type { RouteTable } from "../../services/common/route-merge.js";
import { readSample } from "../support/agent-process.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { makeProjection, meshRecord, versionAt } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

const agents: Agent[] = [];
const registrars: TestRegistrar[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.stop()));
  await Promise.all(registrars.splice(0).map((r) => r.stop()));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

/** The table's mesh defaults as `source origin version-tail attempts`, or "none". */
const meshOf = (table: RouteTable | undefined): string => {
  const mesh = table?.meshDefaults;
  if (mesh === undefined) return "none";
  return `${mesh.source} ${mesh.origin} ${mesh.version.slice(-4, -1)} ${mesh.config.retry?.attempts}`;
};

async function hubWith(attempts: number, version: number): Promise<TestRegistrar> {
  const registrar = await startTestRegistrar(["--cluster", "hub"]);
  registrars.push(registrar);
  await registrar.registrar.store.put(makeProjection("shop/a", { version: versionAt(1) }));
  await registrar.registrar.store.put(
    meshRecord({ retry: { attempts } }, { version: versionAt(version) }),
  );
  return registrar;
}

function agentFor(registrar: string, options: Partial<AgentOptions> = {}): Agent {
  const agent = createAgent({
    registrar,
    cluster: "spoke",
    dependencies: ["shop/a"],
    pollIntervalMs: 100,
    backoffInitialMs: 10,
    backoffMaxMs: 50,
    ...options,
  });
  agents.push(agent);
  return agent;
}

describe("agent: the mesh record", () => {
  it("follows @mesh besides its dependency set, through an edit and a removal, and serves it from its cache after a restart", async () => {
    const hub = await hubWith(2, 1);
    const cacheDir = await mkdtemp(join(tmpdir(), "aether-agent-mesh-"));
    dirs.push(cacheDir);
    const agent = agentFor(hub.url, { cacheDir });
    await agent.start();
    await agent.whenReady();
    await waitFor(() => meshOf(agent.table) !== "none", 5_000, "the mesh defaults");
    expect(meshOf(agent.table)).toBe("imported hub 001 2");
    expect(agent.dependencies).toEqual(["shop/a"]);
    expect(agent.table?.services.map((e) => e.service)).toEqual(["shop/a"]);

    await hub.registrar.store.put(
      meshRecord({ retry: { attempts: 5 } }, { version: versionAt(2) }),
    );
    await waitFor(() => meshOf(agent.table) === "imported hub 002 5", 5_000, "the edit");

    await hub.registrar.store.delete("@mesh");
    await waitFor(() => meshOf(agent.table) === "none", 5_000, "the removal");
    expect(agent.table?.services.map((e) => e.service)).toEqual(["shop/a"]);

    await hub.registrar.store.put(
      meshRecord({ retry: { attempts: 7 } }, { version: versionAt(3) }),
    );
    await waitFor(() => meshOf(agent.table) === "imported hub 003 7", 5_000, "the new record");
    await agent.stop();
    await hub.stop();
    registrars.splice(0);
    // The registrar is gone: the restarted agent serves the cached mesh defaults at once.
    const restarted = agentFor(hub.url, { cacheDir });
    await restarted.start();
    expect(restarted.ready).toBe(true);
    expect(meshOf(restarted.table)).toBe("imported hub 003 7");
  });

  it("an agent with an empty dependency set follows nothing, the mesh record included", async () => {
    const hub = await hubWith(2, 1);
    const agent = agentFor(hub.url, { dependencies: [] });
    await agent.start();
    await agent.whenReady();
    // A dependency later brings the mesh record with it.
    expect(meshOf(agent.table)).toBe("none");
    agent.setDependencies(["shop/a"]);
    await waitFor(() => meshOf(agent.table) === "imported hub 001 2", 5_000, "the mesh defaults");
  });

  it("rejects a mesh record from an origin it does not trust, counted like any projection", async () => {
    const hub = await hubWith(2, 1);
    const agent = agentFor(hub.url, { controlCluster: "elsewhere" });
    await agent.start();
    await agent.whenReady();
    await waitFor(
      async () =>
        ((await readSample(
          await agent.metrics.registry.metrics(),
          'aether_config_import_rejections_total{reason="untrusted_origin"}',
        )) ?? 0) >= 2,
      5_000,
      "both projections rejected",
    );
    expect(meshOf(agent.table)).toBe("none");
  });
});
