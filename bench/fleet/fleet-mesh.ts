/**
 * The processes of one fleet-benchmark leg, on a fresh etcd of its own: the
 * hub registrar exporting the mesh from a manifest directory
 * (`--export-source dir:`), and once etcd holds all of it, the spoke
 * registrar the agents watch (`--agent-report-interval` as given).
 */
import { createEtcdClient } from "../../services/registrar/store/etcd-store.js";
import { originKeyPrefix } from "../../services/registrar/store/store-key.js";
import type { EtcdHandle } from "../../test/support/etcd.js";
import {
  type RegistrarProcess,
  startRegistrarProcess,
} from "../../test/support/registrar-process.js";
import { waitFor } from "../../test/support/wait.js";
import { startLegStore } from "../leg-run.js";
import { REGISTRAR_JS } from "../run-bench.js";

/** The store prefix the registrars use (their default). */
export const FLEET_PREFIX = "/aether/v1";

/** A leg's running processes. */
export interface FleetMesh {
  readonly etcd: EtcdHandle;
  readonly hub: RegistrarProcess;
  readonly spoke: RegistrarProcess;
  /** The hub's manifest directory (the burst rewrites its files). */
  readonly manifests: string;
  /** Stops the registrars and etcd. */
  stop(): Promise<void>;
}

/** What the mesh is given. */
export interface FleetMeshSetup {
  readonly services: number;
  readonly agents: number;
  /** A fresh directory of the leg's own. */
  readonly dir: string;
  /** The spoke's `--agent-report-interval`. */
  readonly reportInterval: string;
  /** `--cpu-prof` node options for the process named; [] without it. */
  readonly profile: (name: string) => string[];
}

/** Starts etcd, the hub (waiting until etcd holds all `services`) and the spoke (until ready). */
export async function startFleetMesh(setup: FleetMeshSetup, leg: string): Promise<FleetMesh> {
  const { etcd, registrars, manifests, stop } = await startLegStore(setup.dir, setup.services);
  try {
    const storeArgs = ["--store", "etcd", "--etcd-endpoints", etcd.endpoint];
    const common = [...storeArgs, "--control-cluster", "hub"];
    const hub = await startRegistrarProcess(
      ["--cluster", "hub", ...common, "--export-source", `dir:${manifests}`],
      { nodeArgs: setup.profile(`hub-${leg}`), timeoutMs: 60_000, script: REGISTRAR_JS },
    );
    registrars.push(hub);
    const client = createEtcdClient([etcd.endpoint]);
    try {
      const hubKeys = originKeyPrefix(FLEET_PREFIX, "hub");
      await waitFor(
        async () => (await client.getAll().prefix(hubKeys).count()) >= setup.services,
        180_000,
        "the hub's export",
        50,
      );
    } finally {
      client.close();
    }
    const spoke = await startRegistrarProcess(
      [
        ...["--cluster", "spoke", ...common, "--keepalive", "10m"],
        ...["--agent-report-interval", setup.reportInterval],
        ...["--max-watch-streams", String(Math.max(2_000, setup.agents * 2))],
        ...["--max-connections", String(Math.max(4_096, setup.agents * 2 + 64))],
      ],
      { nodeArgs: setup.profile(`spoke-${leg}`), timeoutMs: 60_000, script: REGISTRAR_JS },
    );
    registrars.push(spoke);
    await waitFor(async () => (await fetch(`${spoke.url}/readyz`)).ok, 180_000, "the spoke ready");
    return { etcd, hub, spoke, manifests, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
