/**
 * `npm run bench -- --tls`: what mutual TLS costs the registrar, measured
 * twice in one run on one real etcd holding N services: once with the
 * registrar serving h2c, once serving mTLS (the shared test PKI: its
 * registrar SVID, both bundles, `--authorize` the agents' ID). Per leg:
 *
 * 1. The registrar's RSS with every projection and no client, then with M
 *    real agents (worker processes, each agent its own HTTP/2 connection and
 *    watch stream, made as aether-agent makes it: over TLS with its SVID and
 *    the registrar's SPIFFE ID checked); the difference per stream.
 * 2. New connections per second (connection-rate.ts), one at a time and
 *    `--handshake-concurrency` at once, after the fleet has gone.
 */

import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { createEtcdStore } from "../../services/registrar/store/etcd-store.js";
import { clientTlsOptions } from "../../services/runtime/tls/client-tls.js";
import { loadTlsMaterial } from "../../services/runtime/tls/material-read.js";
import { startEtcd } from "../../test/support/etcd.js";
import { registrarTlsFlags } from "../../test/support/mtls-clients.js";
import { makeProjection } from "../../test/support/projections.js";
import { startRegistrarProcess } from "../../test/support/registrar-process.js";
import {
  createSpiffePki,
  REGISTRAR_ID,
  type SpiffePki,
} from "../../test/support/test-spiffe-pki.js";
import { waitFor } from "../../test/support/wait.js";
import { readMemory } from "../proc-stats.js";
import { buildMains, progress, REGISTRAR_JS } from "../run-bench.js";
import { createScenario } from "../scenario.js";
import { quantile } from "../stats.js";
import { createWorkerPool } from "../worker-pool.js";
import { preciseNow } from "../worker-protocol.js";
import { type ConnectionRate, measureConnectionRate } from "./connection-rate.js";

/** The flags of the TLS benchmark (see bench-flags.ts). */
export interface TlsBenchFlags {
  readonly services: number;
  readonly agents: number;
  readonly deps: number;
  readonly workers: number;
  readonly seed: number;
  readonly handshakeSeconds: number;
  readonly handshakeConcurrency: number;
  /** `--cpu-prof`: the registrars and workers write CPU profiles here; undefined: none. */
  readonly cpuProfDir?: string;
}

/** One transport's measurements. */
export interface TlsLeg {
  readonly transport: "h2c" | "mTLS";
  /** The registrar serving every projection, before any agent (median of 5 samples, MiB). */
  readonly baseRssMb: number;
  /** The same with every agent's stream open. */
  readonly fleetRssMb: number;
  /** (fleet − base) / agents, in KiB. */
  readonly perStreamKb: number;
  /** From the fleet's start until every agent had its first table. */
  readonly agentsReadyMs: number;
  readonly sequential: ConnectionRate;
  readonly concurrent: ConnectionRate;
}

/** The raw results (bench/results/tls.json). */
export interface TlsBenchResults {
  readonly startedAt: string;
  /** `loadAverage`: the machine's 1-minute load average when the run started (others' work too). */
  readonly machine: { cpus: number; node: string; etcd: string; loadAverage: number };
  readonly flags: TlsBenchFlags;
  readonly legs: readonly TlsLeg[];
}

const KEEPALIVE_TIMEOUT_MS = 30 * 60_000;

/** The median of five VmRSS readings 400 ms apart (MiB); NaN when the process is gone. */
async function settledRss(pid: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    if (i > 0) await delay(400);
    samples.push(readMemory(pid)?.rssMb ?? Number.NaN);
  }
  return Math.round(quantile(samples, 0.5) * 10) / 10;
}

/** Runs both legs; see the module comment. */
export async function runTlsBench(flags: TlsBenchFlags): Promise<TlsBenchResults> {
  const startedAt = new Date().toISOString();
  const loadAverage = Math.round((loadavg()[0] ?? 0) * 100) / 100;
  progress("compiling the registrar (deploy/tsconfig.build.json → dist/)");
  buildMains();
  const dir = await mkdtemp(join(tmpdir(), "aether-bench-tls-"));
  const etcd = await startEtcd();
  try {
    const etcdVersion = await fetch(`${etcd.endpoint}/version`)
      .then((r) => r.json() as Promise<{ etcdserver?: string }>)
      .then((v) => v.etcdserver ?? "unknown");
    const scenario = createScenario({ ...flags, changes: 0 });
    const store = createEtcdStore({ origin: "hub", endpoints: [etcd.endpoint] });
    for (let i = 0; i < scenario.services.length; i += 200) {
      await Promise.all(
        scenario.services.slice(i, i + 200).map((s) => store.put(makeProjection(s))),
      );
    }
    await store.close();
    progress("making the SPIFFE PKI (openssl)");
    const pki = await createSpiffePki(dir);
    const legs: TlsLeg[] = [];
    for (const transport of ["h2c", "mTLS"] as const) {
      legs.push(await runLeg(transport, flags, etcd.endpoint, scenario, pki));
    }
    return {
      startedAt,
      machine: {
        ...{ cpus: availableParallelism(), node: process.version, etcd: etcdVersion },
        loadAverage,
      },
      flags,
      legs,
    };
  } finally {
    await etcd.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** `node --cpu-prof` into `flags.cpuProfDir/<name>/` (none without it). */
function profileArgs(flags: TlsBenchFlags, name: string): string[] {
  if (flags.cpuProfDir === undefined) return [];
  return ["--cpu-prof", "--cpu-prof-dir", join(flags.cpuProfDir, name)];
}

async function runLeg(
  transport: "h2c" | "mTLS",
  flags: TlsBenchFlags,
  endpoint: string,
  scenario: ReturnType<typeof createScenario>,
  pki: SpiffePki,
): Promise<TlsLeg> {
  const tls = transport === "mTLS";
  progress(`${transport}: registrar with ${flags.services} services`);
  const registrar = await startRegistrarProcess(
    [
      ...["--cluster", "spoke", "--store", "etcd", "--etcd-endpoints", endpoint],
      ...["--keepalive", "10m", "--admin-listen", "127.0.0.1:0"],
      // The bench measures capacity, not the production limits: room for every agent.
      ...["--max-watch-streams", String(Math.max(2_000, flags.agents * 2))],
      ...["--max-connections", String(Math.max(4_096, flags.agents * 2 + 64))],
      ...(tls ? registrarTlsFlags(pki) : []),
    ],
    {
      nodeArgs: profileArgs(flags, `registrar-${transport}`),
      timeoutMs: 60_000,
      script: REGISTRAR_JS,
    },
  );
  const pool = createWorkerPool(flags.workers, profileArgs(flags, `workers-${transport}`));
  try {
    await waitFor(
      async () => (await fetch(`${registrar.adminUrl}/readyz`)).ok,
      60_000,
      "the registrar's readiness",
      20,
    );
    const baseRssMb = await settledRss(registrar.pid);
    const bundleFiles = new Map([
      ["hub.mesh", pki.bundles.hubJwks],
      ["east.mesh", pki.bundles.eastPem],
    ]);
    const agentTls = { certFile: pki.client.cert, keyFile: pki.client.key, bundleFiles };
    progress(`${transport}: ${flags.agents} agents in ${flags.workers} workers`);
    const tFleet = preciseNow();
    const readyAt = await pool.startAgents(registrar.url, scenario.agents, "watch", {
      keepaliveTimeoutMs: KEEPALIVE_TIMEOUT_MS,
      ownConnection: tls ? { tls: { ...agentTls, registrarSpiffeId: REGISTRAR_ID } } : {},
    });
    const agentsReadyMs = Math.round(Math.max(...readyAt.values()) - tFleet);
    const fleetRssMb = await settledRss(registrar.pid);
    const perStreamKb = Math.round(((fleetRssMb - baseRssMb) * 1024) / flags.agents);
    progress(
      `${transport}: RSS ${baseRssMb} MB → ${fleetRssMb} MB with ${flags.agents} streams (${perStreamKb} KiB each); fleet ready in ${agentsReadyMs} ms`,
    );
    await pool.stopAgents();

    const material = tls ? await loadTlsMaterial(agentTls) : undefined;
    const rate = (concurrency: number) =>
      measureConnectionRate({
        baseUrl: registrar.url,
        ...(material === undefined ? {} : { tls: clientTlsOptions(() => material, REGISTRAR_ID) }),
        service: scenario.services[0] as string,
        concurrency,
        seconds: flags.handshakeSeconds,
        serverPid: registrar.pid,
      });
    const sequential = await rate(1);
    const concurrent = await rate(flags.handshakeConcurrency);
    progress(
      `${transport}: ${sequential.perSecond} connections/s one at a time, ${concurrent.perSecond}/s ${flags.handshakeConcurrency} at once (${sequential.failures + concurrent.failures} failed)`,
    );
    return {
      ...{ transport, baseRssMb, fleetRssMb, perStreamKb, agentsReadyMs },
      ...{ sequential, concurrent },
    };
  } finally {
    await pool.close().catch(() => undefined);
    await registrar.stop();
  }
}
