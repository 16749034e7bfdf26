/**
 * e2e 4: federated mode (no --control-cluster). Two clusters, east and
 * west, export the same services from different manifest directories (west
 * runs a 50/50 canary, east the examples' 90/10). Every registrar's
 * EFFECTIVE view and every agent pick the same winner, and keep it (same
 * origin, same version) across a repeated reconcile and a restart of
 * either exporter.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentProcess, startAgentProcess, stopAllAgents } from "../support/agent-process.js";
import {
  agentProjection,
  configClient,
  EXAMPLES,
  effectiveProjection,
  startClusterRegistrar,
  type TempCopy,
  tempCopy,
  winnerOf,
} from "../support/e2e-cluster.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { readRawProjections, setCanaryWeights } from "../support/export-store.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("e2e4-");
const SERVICE = "shop/checkout";
const CLUSTERS = ["east", "west"] as const;
type Cluster = (typeof CLUSTERS)[number];

let prefix: string;
const dirs = new Map<Cluster, TempCopy>();
const registrars = new Map<Cluster, RegistrarProcess>();
const agents = new Map<Cluster, AgentProcess>();

function startExporter(cluster: Cluster): Promise<RegistrarProcess> {
  return startClusterRegistrar({
    endpoint: shared.etcd.endpoint,
    prefix,
    cluster,
    exportDir: (dirs.get(cluster) as TempCopy).path,
  });
}

beforeAll(async () => {
  prefix = shared.freshPrefix();
  for (const cluster of CLUSTERS) dirs.set(cluster, await tempCopy(join(EXAMPLES, "mesh")));
  await setCanaryWeights((dirs.get("west") as TempCopy).path, 50, 50);
  const started = await Promise.all(CLUSTERS.map(startExporter));
  for (const [i, c] of CLUSTERS.entries()) registrars.set(c, started[i] as RegistrarProcess);
  const startedAgents = await Promise.all(
    CLUSTERS.map((c) =>
      startAgentProcess([
        "--registrar",
        (registrars.get(c) as RegistrarProcess).url,
        "--cluster",
        c,
        "--deps",
        SERVICE,
      ]),
    ),
  );
  for (const [i, c] of CLUSTERS.entries()) agents.set(c, startedAgents[i] as AgentProcess);
  await waitFor(
    async () =>
      (await Promise.all(CLUSTERS.map((c) => readRawProjections(shared.raw, prefix, c)))).every(
        (p) => p.has(SERVICE),
      ),
    15_000,
    "both clusters to export shop/checkout",
  );
}, 60_000);
afterAll(async () => {
  await stopAllAgents();
  await stopAllRegistrars();
  for (const dir of dirs.values()) await dir.remove();
});

/** `origin@version` of shop/checkout at every registrar (EFFECTIVE) and every agent. */
async function winners(): Promise<string[]> {
  return Promise.all([
    ...CLUSTERS.map(async (c) =>
      winnerOf(await effectiveProjection((registrars.get(c) as RegistrarProcess).url, SERVICE)),
    ),
    ...CLUSTERS.map(async (c) =>
      winnerOf(await agentProjection(agents.get(c) as AgentProcess, SERVICE)),
    ),
  ]);
}

/** Waits until all four views name one winner, and returns it. */
async function agreedWinner(): Promise<string> {
  let last: string[] = [];
  await waitFor(
    async () => {
      last = await winners();
      return last[0] !== "none" && last.every((w) => w === last[0]);
    },
    15_000,
    "every registrar and agent to agree on one winner",
  );
  return last[0] as string;
}

/** Both stored versions of shop/checkout: the winner is the newest, ties broken by origin. */
async function expectedWinner(): Promise<string> {
  const stored = await Promise.all(
    CLUSTERS.map(async (c) => {
      const p = (await readRawProjections(shared.raw, prefix, c)).get(SERVICE);
      return { origin: c, version: p?.projection.version ?? "" };
    }),
  );
  stored.sort((a, b) =>
    a.version === b.version ? a.origin.localeCompare(b.origin) : a.version > b.version ? -1 : 1,
  );
  return `${stored[0]?.origin}@${stored[0]?.version}`;
}

/** The export's last success time at `cluster`'s registrar. */
async function lastExport(cluster: Cluster): Promise<string> {
  const status = await configClient(
    (registrars.get(cluster) as RegistrarProcess).url,
  ).getConfigStatus({});
  return status.export?.lastSuccessTime ?? "";
}

let winner = "";

describe("e2e 4: federated conflict, two clusters export shop/checkout", () => {
  it("every registrar's EFFECTIVE view and every agent pick the same winner (the newest version), and both registrars report the conflict with that winner", async () => {
    winner = await agreedWinner();
    expect(winner).toBe(await expectedWinner());
    for (const c of CLUSTERS) {
      const status = await configClient(
        (registrars.get(c) as RegistrarProcess).url,
      ).getConfigStatus({});
      const conflict = status.conflicts.find((x) => x.service === SERVICE);
      expect(`${conflict?.winnerOrigin}@${conflict?.winnerVersion}`).toBe(winner);
      expect(conflict?.loserOrigins).toHaveLength(1);
    }
  });

  it("a repeated reconcile in each exporter (an unrelated manifest added) keeps the same winner and version (no flapping)", async () => {
    for (const c of CLUSTERS) {
      const before = await lastExport(c);
      // A file the source re-reads (an unexported Service): the exporter reconciles, and
      // shop/checkout's content, so its version, is unchanged.
      await writeFile(
        join((dirs.get(c) as TempCopy).path, "shop/noise.yaml"),
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: noise\n  namespace: shop\nspec:\n  ports:\n    - port: 80\n",
      );
      await waitFor(async () => (await lastExport(c)) !== before, 10_000, `${c} to reconcile`);
      expect(await winners()).toEqual([winner, winner, winner, winner]);
    }
  });

  it.each(CLUSTERS)(
    "a restart of the %s exporter keeps the same winner and version everywhere (no flapping)",
    async (c) => {
      await (registrars.get(c) as RegistrarProcess).stop();
      const restarted = await startExporter(c);
      registrars.set(c, restarted);
      await waitFor(async () => (await lastExport(c)) !== "", 15_000, `restarted ${c} to export`);
      expect(await agreedWinner()).toBe(winner);
      expect(await winners()).toEqual([winner, winner, winner, winner]);
    },
  );
});
