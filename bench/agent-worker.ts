/**
 * A benchmark worker process: hosts a share of the fleet's agents, each a
 * real `createAgent` with its own generated ConfigService client over its own
 * HTTP/2 connection to the registrar (so every agent is one real watch
 * stream on one real socket), and reports to the coordinator what they
 * apply and when. It also hosts the raw etcd watcher of the floor
 * measurement, so both sides of the comparison cross a process boundary.
 *
 * Started by `bench/main.ts` through `child_process.fork`; speaks
 * {@link WorkerCommand} / {@link WorkerReport}.
 */
import { connect, type Socket } from "node:net";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { type Agent, createAgent } from "../clients/agent/agent.js";
import type { FollowerClient } from "../clients/agent/follower/config-follower.js";
import { guardHttp2Sessions } from "../clients/agent/registrar-connection.js";
import { ConfigService, WatchEventType } from "../gen/aether/registry/v1/config_service_pb.js";
import type { RouteTable } from "../services/common/route-merge.js";
import {
  createEtcdClient,
  openEtcdWatch,
  prefixEnd,
} from "../services/registrar/store/etcd-store.js";
import { preciseNow, type WorkerCommand, type WorkerReport } from "./worker-protocol.js";

/** An agent and the sockets of every connection it opened. */
interface HostedAgent {
  readonly id: number;
  agent: Agent;
  readonly sockets: Socket[];
  /** The counted connection's sessions; undefined when the agent made its own connection. */
  manager: Http2SessionManager | undefined;
  versions: Map<string, string> | undefined;
  resynced: boolean;
}

/** No PINGs and no keep-alive traffic inside a measurement window (see the report). */
const PING_INTERVAL_MS = 3_600_000;

const send = (report: WorkerReport): void => {
  process.send?.(report);
};

let hosted: HostedAgent[] = [];
let resyncArmed = false;

/** Reports batched per event-loop turn (an IPC message per item would dominate). */
const pending = {
  applied: [] as { id: number; service: string; version: string; t: number }[],
  ready: [] as { id: number; t: number }[],
  synced: [] as { id: number; t: number }[],
};
let flushScheduled = false;
const flushSoon = (): void => {
  if (flushScheduled) return;
  flushScheduled = true;
  setImmediate(() => {
    flushScheduled = false;
    if (pending.applied.length > 0) send({ type: "applied", items: pending.applied.splice(0) });
    if (pending.ready.length > 0) send({ type: "ready", items: pending.ready.splice(0) });
    if (pending.synced.length > 0) send({ type: "synced", items: pending.synced.splice(0) });
  });
};

/** A generated client over a connection whose sockets are recorded, observing SYNCED events. */
function createCountedClient(
  url: string,
  sockets: Socket[],
  onSynced: () => void,
  report = false,
): { client: FollowerClient; manager: Http2SessionManager } {
  const target = new URL(url);
  const manager = guardHttp2Sessions(
    new Http2SessionManager(
      url,
      { pingIntervalMs: PING_INTERVAL_MS, pingTimeoutMs: PING_INTERVAL_MS },
      {
        createConnection: () => {
          const socket = connect({ host: target.hostname, port: Number(target.port) });
          sockets.push(socket);
          return socket;
        },
      },
    ),
  );
  const transport = createConnectTransport({
    baseUrl: url,
    httpVersion: "2",
    sessionManager: manager,
  });
  const base = createClient(ConfigService, transport);
  const client: FollowerClient = {
    listAllConfig: (request, options) => base.listAllConfig(request, options),
    watchConfig: (request, options) => {
      const events = base.watchConfig(request, options);
      return (async function* () {
        for await (const event of events) {
          if (event.type === WatchEventType.SYNCED) onSynced();
          yield event;
        }
      })();
    },
    // With it the agent reports what it applied (see clients/agent/agent.ts createReporter).
    ...(report
      ? {
          reportAppliedConfig: (
            request: Parameters<typeof base.reportAppliedConfig>[0],
            options?: Parameters<typeof base.reportAppliedConfig>[1],
          ) => base.reportAppliedConfig(request, options),
        }
      : {}),
  };
  return { client, manager };
}

/** Reports the services whose version changed between two tables of one agent. */
function noteTable(entry: HostedAgent, table: RouteTable): void {
  const t = preciseNow();
  const next = new Map(table.services.map((s) => [s.service, s.version]));
  const previous = entry.versions;
  entry.versions = next;
  if (previous === undefined) return;
  for (const [service, version] of next) {
    if (previous.get(service) !== version)
      pending.applied.push({ id: entry.id, service, version, t });
  }
  flushSoon();
}

async function start(command: Extract<WorkerCommand, { type: "start" }>): Promise<void> {
  for (const spec of command.agents) {
    const sockets: Socket[] = [];
    const entry: HostedAgent = {
      id: spec.id,
      sockets,
      versions: undefined,
      resynced: false,
      agent: undefined as unknown as Agent,
      manager: undefined,
    };
    const own = command.ownConnection;
    let client: FollowerClient | undefined;
    if (own === undefined) {
      const counted = createCountedClient(
        command.registrar,
        sockets,
        () => {
          if (!resyncArmed || entry.resynced) return;
          entry.resynced = true;
          pending.synced.push({ id: entry.id, t: preciseNow() });
          flushSoon();
        },
        command.report === true,
      );
      client = counted.client;
      entry.manager = counted.manager;
    }
    entry.agent = createAgent({
      registrar: command.registrar,
      cluster: "bench-spoke",
      controlCluster: "hub",
      dependencies: spec.deps,
      // Distinct per agent: agents sharing an id (and identity) are one record to the registrar.
      agentId: `bench-agent-${spec.id}`,
      ...(client === undefined ? {} : { client }),
      ...(own?.tls === undefined ? {} : { tls: own.tls }),
      mode: command.mode,
      ...(command.pollIntervalMs === undefined ? {} : { pollIntervalMs: command.pollIntervalMs }),
      keepaliveTimeoutMs: command.keepaliveTimeoutMs,
      ...(command.signatures === undefined
        ? {}
        : {
            originKeysFile: command.signatures.originKeysFile,
            requireSignatures: command.signatures.require,
          }),
    });
    entry.agent.onUpdate((table) => noteTable(entry, table));
    hosted.push(entry);
  }
  send({ type: "started", agents: command.agents.length });
  await Promise.all(
    hosted.map(async (entry) => {
      await entry.agent.start();
      await entry.agent.whenReady();
      if (entry.versions === undefined && entry.agent.table !== undefined) {
        entry.versions = new Map(entry.agent.table.services.map((s) => [s.service, s.version]));
      }
      pending.ready.push({ id: entry.id, t: preciseNow() });
      flushSoon();
    }),
  );
}

async function stopAll(): Promise<void> {
  const stopping = hosted;
  hosted = [];
  await Promise.all(
    stopping.map(async (entry) => {
      await entry.agent.stop();
      entry.manager?.abort(new Error("benchmark phase over"));
    }),
  );
}

/** One fresh agent, no cache: from start() to its first complete route table. */
async function coldSync(registrar: string, deps: readonly string[]): Promise<number> {
  const sockets: Socket[] = [];
  const { client, manager } = createCountedClient(registrar, sockets, () => undefined);
  const agent = createAgent({
    registrar,
    cluster: "bench-spoke",
    controlCluster: "hub",
    dependencies: deps,
    client,
  });
  const t0 = preciseNow();
  await agent.start();
  await agent.whenReady();
  const ms = preciseNow() - t0;
  await agent.stop();
  manager.abort(new Error("cold sync measured"));
  return ms;
}

/** Every hosted agent's apply-delay histogram totals (see clients/agent/agent-metrics.ts). */
async function applyDelays(): Promise<[number, number, number][]> {
  return Promise.all(
    hosted.map(async (entry): Promise<[number, number, number]> => {
      const metric = entry.agent.metrics.registry.getSingleMetric(
        "aether_config_agent_apply_seconds",
      );
      const values = metric === undefined ? [] : (await metric.get()).values;
      const total = (suffix: string) =>
        values.find(
          (v) =>
            (v as { metricName?: string }).metricName ===
            `aether_config_agent_apply_seconds_${suffix}`,
        )?.value ?? 0;
      return [entry.id, total("sum"), total("count")];
    }),
  );
}

let registrarUrl = "";
let stopFloor: (() => void) | undefined;

/**
 * Opens the floor's raw watch from the revision after the current one, so no
 * put made after `floor-ready` is missed however long the stream takes to start.
 */
async function floorWatch(endpoint: string, prefix: string): Promise<void> {
  const client = createEtcdClient(endpoint.split(","));
  const current = await client.get(prefix).exec();
  const startRevision = Number(current.header.revision) + 1;
  stopFloor = openEtcdWatch(
    client,
    {
      key: Buffer.from(prefix),
      rangeEnd: prefixEnd(prefix),
      startRevision,
      requestTimeoutMs: 5_000,
      probeIntervalMs: 3_600_000,
    },
    {
      changes(changes) {
        const t = preciseNow();
        for (const change of changes) send({ type: "floor", key: change.key, t });
      },
      error(error) {
        send({ type: "error", message: `floor watch: ${error.message}` });
      },
    },
  );
  send({ type: "floor-ready" });
}

process.on("message", (message: WorkerCommand) => {
  const run = async (): Promise<void> => {
    switch (message.type) {
      case "start":
        registrarUrl = message.registrar;
        await start(message);
        return;
      case "bytes":
        send({
          type: "bytes",
          request: message.request,
          bytes: hosted.map((e) => [e.id, e.sockets.reduce((sum, s) => sum + s.bytesRead, 0)]),
        });
        return;
      case "apply-delays":
        send({ type: "apply-delays", request: message.request, totals: await applyDelays() });
        return;
      case "mark-resync":
        resyncArmed = true;
        for (const entry of hosted) entry.resynced = false;
        return;
      case "cold-sync":
        send({
          type: "cold-sync",
          request: message.request,
          ms: await coldSync(registrarUrl, message.deps),
        });
        return;
      case "floor-watch":
        await floorWatch(message.endpoint, message.prefix);
        return;
      case "stop":
        await stopAll();
        stopFloor?.();
        send({ type: "stopped", request: message.request });
        return;
    }
  };
  run().catch((error: unknown) => {
    send({
      type: "error",
      message: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
  });
});

process.on("disconnect", () => process.exit(0));
