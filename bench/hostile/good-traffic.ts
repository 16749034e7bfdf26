/**
 * The well-behaved side of the hostile benchmark, in the coordinator: real
 * agents (`createAgent`, each its own HTTP/2 connection and watch stream),
 * a change to one service they all depend on every second, written to etcd
 * the way an exporter does, and a polite client that lists its services in
 * a loop over a connection it opened before the attacks. Each window
 * reports how long the changes took to reach every agent, the changes that
 * did not arrive within {@link MISSED_AFTER_MS}, the agents' stream
 * reconnects and mode, and the polite client's goodput.
 */
import { type Agent, createAgent } from "../../clients/agent/agent.js";
import { createRegistrarConnection } from "../../clients/agent/registrar-connection.js";
import { formatVersion, parseVersion } from "../../services/common/projection-version.js";
import type { ConfigStore } from "../../services/registrar/store/config-store.js";
import { readSample } from "../../test/support/agent-process.js";
import { makeProjection } from "../../test/support/projections.js";
import { type LatencySummary, summarize } from "../stats.js";

/** A change not applied by every agent within this long counts as missed. */
export const MISSED_AFTER_MS = 10_000;
/** The service every agent depends on and the bench changes every second. */
export const HOT_SERVICE = "bench/hot";

/** What the well-behaved side saw in one window. */
export interface GoodWindow {
  /** Changes written in the window (and earlier ones that completed in it). */
  readonly changes: number;
  /** Write to last agent applied, of the changes completed in the window. */
  readonly propagation: LatencySummary;
  /** Changes not applied by every agent within {@link MISSED_AFTER_MS}. */
  readonly missed: number;
  /** Watch streams the agents had to reopen in the window. */
  readonly streamReconnects: number;
  /** Agents not in watch mode at the window's end. */
  readonly agentsNotWatching: number;
  /** The polite client's ListConfig calls answered OK, per second. */
  readonly listOkPerSecond: number;
  /** Its calls that failed. */
  readonly listFailed: number;
  /** Latency of its calls answered OK. */
  readonly listLatency: LatencySummary;
}

/** The running well-behaved side. */
export interface GoodTraffic {
  /** What was seen since the last call (or the start); starts a new window. */
  take(): Promise<GoodWindow>;
  /** Stops the changes, the client and the agents. */
  stop(): Promise<void>;
}

interface Pending {
  readonly version: bigint;
  readonly writtenAt: number;
  readonly applied: Set<Agent>;
}

/**
 * Starts `agents` agents against `registrarUrl`, each depending on
 * {@link HOT_SERVICE} and on `deps`, waits until they are all ready, then
 * starts the changes (through `store`, the hub's origin) and the client.
 */
export async function startGoodTraffic(options: {
  readonly registrarUrl: string;
  readonly store: ConfigStore;
  readonly agents: number;
  readonly deps: readonly string[];
}): Promise<GoodTraffic> {
  const dependencies = [HOT_SERVICE, ...options.deps];
  const agents: Agent[] = [];
  const pending: Pending[] = [];
  let completed: number[] = [];
  let missed = 0;
  let changes = 0;
  for (let i = 0; i < options.agents; i++) {
    const agent = createAgent({
      registrar: options.registrarUrl,
      cluster: "bench",
      dependencies,
      processMetrics: false,
    });
    agent.onUpdate((table) => {
      const entry = table.services.find((e) => e.service === HOT_SERVICE);
      const version = entry === undefined ? undefined : parseVersion(entry.version);
      if (version === undefined) return;
      for (const change of [...pending]) {
        if (change.version > version) continue;
        change.applied.add(agent);
        if (change.applied.size === agents.length) {
          completed.push(performance.now() - change.writtenAt);
          pending.splice(pending.indexOf(change), 1);
        }
      }
    });
    agents.push(agent);
  }
  await Promise.all(agents.map((agent) => agent.start()));
  await Promise.all(agents.map((agent) => agent.whenReady()));

  let running = true;
  let lastNanos = 0n;
  const changing = (async () => {
    while (running) {
      // Now, in nanoseconds, strictly increasing.
      const nanos = BigInt(Date.now()) * 1_000_000n;
      lastNanos = nanos > lastNanos ? nanos : lastNanos + 1n;
      const version = lastNanos;
      pending.push({ version, writtenAt: performance.now(), applied: new Set() });
      changes++;
      await options.store
        .put(makeProjection(HOT_SERVICE, { version: formatVersion(version) }))
        .catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  })();

  const polite = createRegistrarConnection({ baseUrl: options.registrarUrl });
  const client = polite.client;
  let listOk: number[] = [];
  let listFailed = 0;
  const listing = (async () => {
    while (running) {
      const started = performance.now();
      try {
        await client.listConfig({ services: dependencies }, { timeoutMs: 5_000 });
        listOk.push(performance.now() - started);
      } catch {
        listFailed++;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();

  const reconnects = async () => {
    let total = 0;
    for (const agent of agents) {
      const text = await agent.metrics.registry.metrics();
      total += readSample(text, "aether_config_stream_reconnects_total") ?? 0;
    }
    return total;
  };
  let reconnectsBefore = await reconnects();
  let windowStart = performance.now();

  return {
    async take() {
      const now = performance.now();
      for (const change of [...pending]) {
        if (now - change.writtenAt < MISSED_AFTER_MS) continue;
        missed++;
        pending.splice(pending.indexOf(change), 1);
      }
      const reconnectsNow = await reconnects();
      const seconds = (now - windowStart) / 1_000;
      const window: GoodWindow = {
        changes,
        propagation: summarize(completed),
        missed,
        streamReconnects: reconnectsNow - reconnectsBefore,
        agentsNotWatching: agents.filter((agent) => agent.mode !== "watch").length,
        listOkPerSecond: Math.round((listOk.length / seconds) * 10) / 10,
        listFailed,
        listLatency: summarize(listOk),
      };
      completed = [];
      missed = 0;
      changes = 0;
      listOk = [];
      listFailed = 0;
      reconnectsBefore = reconnectsNow;
      windowStart = now;
      return window;
    },
    async stop() {
      running = false;
      await Promise.all([changing, listing]);
      polite.close();
      await Promise.all(agents.map((agent) => agent.stop()));
    },
  };
}
