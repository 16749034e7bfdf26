/**
 * One export round of the signing benchmark, unsigned or signed, on a
 * fresh etcd of its own: the hub registrar (`--export-source dir:`, and
 * `--signing-key-file` when signed) from spawn until etcd holds all N
 * projections, and its CPU time then; the stored bytes per value; a spoke
 * registrar (`--origin-keys --require-signatures` when signed) from spawn
 * until one ListAllConfig through it returned all N, its CPU time then, and
 * a second, warm ListAllConfig. The leg's edit phase runs on the last
 * round's processes; the earlier rounds are stopped at once (their figures
 * are repeats, interleaved unsigned and signed, so the machine's load moves
 * both legs' medians alike).
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ConfigService, ConfigView } from "../../gen/aether/registry/v1/config_service_pb.js";
import { splitStoredValue } from "../../services/common/projection-signature.js";
import { createEtcdClient } from "../../services/registrar/store/etcd-store.js";
import { originKeyPrefix } from "../../services/registrar/store/store-key.js";
import type { EtcdHandle } from "../../test/support/etcd.js";
import {
  type RegistrarProcess,
  startRegistrarProcess,
} from "../../test/support/registrar-process.js";
import { waitFor } from "../../test/support/wait.js";
import { startLegStore } from "../leg-run.js";
import { readCpuSeconds } from "../proc-stats.js";
import { progress, REGISTRAR_JS } from "../run-bench.js";
import { preciseNow } from "../worker-protocol.js";
import type { BenchKeys } from "./bench-keys.js";

/** The timed figures of one round. */
export interface RoundFigures {
  readonly coldExport: { spawnToAllMs: number; hubCpuS: number };
  readonly spoke: { spawnToServedMs: number; cpuS: number; warmListAllMs: number };
}

/** A round whose processes still run. */
export interface ExportRound {
  readonly figures: RoundFigures;
  /** The hub's stored values: how many, their mean size, how many are signed, and one of them. */
  readonly stored: { values: number; meanBytes: number; signedValues: number; sample: Uint8Array };
  readonly hub: RegistrarProcess;
  readonly spoke: RegistrarProcess;
  /** The hub's manifest directory (the edit phase rewrites its files). */
  readonly manifests: string;
  /** Stops the registrars and etcd. */
  stop(): Promise<void>;
}

/** What a round is given. */
export interface RoundSetup {
  readonly services: number;
  readonly agents: number;
  /** A fresh directory of the round's own. */
  readonly dir: string;
  /** `--cpu-prof` node options for the process named; [] without it. */
  readonly profile: (name: string) => string[];
}

const PREFIX = "/aether/v1";
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Runs a round (signed when `keys` is given) and leaves its processes running. */
export async function startExportRound(
  setup: RoundSetup,
  keys: BenchKeys | undefined,
): Promise<ExportRound> {
  const name = keys === undefined ? "unsigned" : "signed";
  const { etcd, registrars, manifests, stop } = await startLegStore(setup.dir, setup.services);
  try {
    const storeArgs = [
      ...["--store", "etcd", "--etcd-endpoints", etcd.endpoint, "--control-cluster", "hub"],
    ];
    const tSpawn = preciseNow();
    const hub = await startRegistrarProcess(
      [
        ...["--cluster", "hub", ...storeArgs, "--export-source", `dir:${manifests}`],
        ...(keys === undefined ? [] : ["--signing-key-file", keys.keyFile]),
      ],
      { nodeArgs: setup.profile(`hub-${name}`), timeoutMs: 60_000, script: REGISTRAR_JS },
    );
    registrars.push(hub);
    const coldExport = await awaitExport(etcd, setup.services, hub.pid, tSpawn);
    const stored = await readStored(etcd);
    const tSpoke = preciseNow();
    const spoke = await startRegistrarProcess(
      [
        ...["--cluster", "spoke", ...storeArgs, "--keepalive", "10m"],
        ...["--max-watch-streams", String(Math.max(2_000, setup.agents * 2))],
        ...["--max-connections", String(Math.max(4_096, setup.agents * 2 + 64))],
        ...(keys === undefined
          ? []
          : ["--origin-keys", keys.originKeysFile, "--require-signatures"]),
      ],
      { nodeArgs: setup.profile(`spoke-${name}`), timeoutMs: 60_000, script: REGISTRAR_JS },
    );
    registrars.push(spoke);
    const spokeFigures = await measureSpoke(spoke, setup.services, tSpoke);
    progress(
      `${name}: exported in ${coldExport.spawnToAllMs} ms (hub CPU ${coldExport.hubCpuS} s), ` +
        `${stored.meanBytes} bytes per value; spoke served all in ${spokeFigures.spawnToServedMs} ms (CPU ${spokeFigures.cpuS} s)`,
    );
    return {
      figures: { coldExport, spoke: spokeFigures },
      ...{ stored, hub, spoke, manifests, stop },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Waits until etcd holds the hub's `services` projections; the wall time from `tSpawn`, and the hub's CPU. */
async function awaitExport(
  etcd: EtcdHandle,
  services: number,
  hubPid: number,
  tSpawn: number,
): Promise<RoundFigures["coldExport"]> {
  const client = createEtcdClient([etcd.endpoint]);
  try {
    const hubKeys = originKeyPrefix(PREFIX, "hub");
    await waitFor(
      async () => (await client.getAll().prefix(hubKeys).count()) >= services,
      180_000,
      "the cold export",
      20,
    );
    const spawnToAllMs = Math.round(preciseNow() - tSpawn);
    return { spawnToAllMs, hubCpuS: round(readCpuSeconds(hubPid) ?? Number.NaN, 2) };
  } finally {
    client.close();
  }
}

/** The hub's stored values: how many, their mean size, how many are signed, and one of them. */
async function readStored(etcd: EtcdHandle): Promise<ExportRound["stored"]> {
  const client = createEtcdClient([etcd.endpoint]);
  try {
    const values = Object.values(
      await client.getAll().prefix(originKeyPrefix(PREFIX, "hub")).buffers(),
    );
    const bytes = values.reduce((sum, v) => sum + v.length, 0);
    const signedValues = values.filter((v) => splitStoredValue(v).signature !== undefined).length;
    return {
      values: values.length,
      meanBytes: round(bytes / Math.max(1, values.length)),
      signedValues,
      sample: new Uint8Array(values[0] ?? []),
    };
  } finally {
    client.close();
  }
}

/**
 * From the spoke's spawn (`tSpawn`) until one ListAllConfig through it
 * (page size 1000, as the agent lists) returned all `services`; its CPU
 * then; and the time of one more ListAllConfig, warm.
 */
async function measureSpoke(
  spoke: RegistrarProcess,
  services: number,
  tSpawn: number,
): Promise<RoundFigures["spoke"]> {
  const client = createClient(
    ConfigService,
    createConnectTransport({ baseUrl: spoke.url, httpVersion: "2" }),
  );
  const listAll = async (): Promise<number> => {
    let pageToken = "";
    let count = 0;
    do {
      const page = await client.listAllConfig({
        view: ConfigView.EFFECTIVE,
        pageSize: 1000,
        pageToken,
      });
      count += page.projections.length;
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    return count;
  };
  await waitFor(
    async () => (await fetch(`${spoke.url}/readyz`)).ok && (await listAll()) >= services,
    180_000,
    "the spoke serving every projection",
    20,
  );
  const spawnToServedMs = Math.round(preciseNow() - tSpawn);
  const cpuS = round(readCpuSeconds(spoke.pid) ?? Number.NaN, 2);
  const t0 = preciseNow();
  const count = await listAll();
  if (count < services) throw new Error(`the spoke listed ${count} of ${services}`);
  return { spawnToServedMs, cpuS, warmListAllMs: Math.round(preciseNow() - t0) };
}
