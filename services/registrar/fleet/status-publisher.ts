/**
 * The import-status publisher: this replica's header and one
 * `ServiceImportStatus` per service under
 * `<prefix>/clusters/<own>/status/<replica>/` (status-layout.ts). The
 * decisions are `services/common/import-status-plan.ts`'; this shell reads
 * the inputs (the cache's winners and refusals, the agents' reports, the
 * local digests), writes what changed in batches, at most once per
 * `intervalMs` (changes coalesced), the header at least every
 * `heartbeatMs`, and deletes the own cluster's dead replicas. It first
 * reads its own old values, so a restart rewrites only what changed. A
 * failed write is counted and retried; nothing here affects serving.
 */
import { toBinary } from "@bufbuild/protobuf";
import { Counter, Gauge, type Registry } from "prom-client";
import {
  type ImportStatusReplica,
  ImportStatusReplicaSchema,
} from "../../../gen/aether/registry/v1/fleet_pb.js";
import { createStatusEncoder } from "../../common/import-status-memo.js";
import { batches, headerDue, replicaHeader } from "../../common/import-status-plan.js";
import { replicaHeaderKey } from "../../common/status-layout.js";
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import type { ConfigCache } from "../cache/config-cache.js";
import { MAX_WRITE_BATCH } from "../store/config-store.js";
import type { StatusStore, StatusWrite } from "../store/status-store.js";
import type { AgentReportsView, StatusFeed } from "./fleet-inputs.js";
import {
  deadReplicaKeys,
  readOwnValues,
  servedProjections,
  serviceWrites,
} from "./status-publisher-reads.js";

/** The cluster's local config, as the publisher reads it (`local-digests.ts`). */
export interface LocalDigests {
  /** The digest of each service's local projection content, by service. */
  digests(): ReadonlyMap<string, string>;
  /** Calls `listener` after every change; returns the remover. */
  onChange(listener: () => void): () => void;
}

/** Options of {@link createStatusPublisher}. */
export interface StatusPublisherOptions {
  readonly store: Pick<StatusStore, "list" | "write" | "prefix" | "cluster">;
  /** This replica's name (`--replica-id`). */
  readonly replica: string;
  readonly cache: Pick<ConfigCache, "state" | "revision" | "snapshot" | "rejections">;
  readonly agents: AgentReportsView;
  /** The local source's digests; undefined without `--local-source`. */
  readonly local?: LocalDigests;
  /** The feed, for the own cluster's other replicas (garbage collection). */
  readonly feed: StatusFeed;
  /** The control cluster; empty in federated mode. */
  readonly controlCluster: string;
  /** At most one flush per this many milliseconds (`--status-interval`). */
  readonly intervalMs: number;
  /** The header is rewritten at least this often (`--status-heartbeat`). */
  readonly heartbeatMs: number;
  /** Where the publisher's metrics are registered. */
  readonly registry: Registry;
  /** The clock; default `Date.now`. */
  readonly now?: () => number;
  readonly logger?: Logger;
}

/** A running publisher. */
export interface StatusPublisher {
  /** Starts: reads its own old values, then publishes and follows its inputs. */
  start(): void;
  /** Stops; a write in flight may still land. */
  stop(): Promise<void>;
  /** Resolves after the next flush that wrote everything it planned (tests). */
  whenFlushed(): Promise<void>;
}

/** Creates a publisher; nothing runs until `start()`. */
export function createStatusPublisher(options: StatusPublisherOptions): StatusPublisher {
  const { store, replica, cache, agents, local, feed, intervalMs, heartbeatMs } = options;
  const { prefix, cluster } = store;
  const place = { prefix, cluster, replica };
  const now = options.now ?? Date.now;
  const logger = options.logger ?? createSilentLogger();
  let written: Map<string, Uint8Array> | undefined;
  const encoder = createStatusEncoder();
  let lastHeader: { header: ImportStatusReplica; atMs: number } | undefined;
  const writes = publisherMetrics(options.registry, () => written?.size ?? 0);

  let running = false;
  let timer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> | undefined;
  let dirty = true;
  let lastTickAtMs = Number.NEGATIVE_INFINITY;
  /** The cache's revision and state the last round read: a change makes the next tick publish. */
  let seen = { revision: -1, state: "" };
  const removers: (() => void)[] = [];
  let waiters: (() => void)[] = [];

  /**
   * Plans the next tick: one interval after the last (the cache is looked
   * at every interval, a comparison of two fields, rather than followed
   * as a subscriber), at the latest when the header is due.
   */
  const schedule = (): void => {
    if (!running || flushing !== undefined) return;
    clearTimeout(timer);
    const due = Math.min(lastTickAtMs + intervalMs, (lastHeader?.atMs ?? 0) + heartbeatMs);
    timer = setTimeout(() => void tick(), Math.max(0, due - now()));
  };
  const changed = (): void => {
    dirty = true;
    schedule();
  };
  /** Publishes when an input changed or the header is due; otherwise only plans the next tick. */
  const tick = (): Promise<void> => {
    const moved = cache.revision !== seen.revision || cache.state !== seen.state;
    const heartbeat = now() >= (lastHeader?.atMs ?? 0) + heartbeatMs;
    if (dirty || moved || heartbeat || written === undefined) return flush();
    lastTickAtMs = now();
    schedule();
    return Promise.resolve();
  };

  const write = async (changes: StatusWrite[]): Promise<void> => {
    for (const batch of batches(changes, MAX_WRITE_BATCH)) {
      try {
        await store.write(batch);
        writes.inc({ result: "ok" });
      } catch (error) {
        writes.inc({ result: "error" });
        throw error;
      }
    }
  };

  /**
   * What one round writes: the changed service values and, with them or when due, the header
   * (last, so a reader sees it agree with the values it counts). Synchronous and apart from
   * {@link publish}, so the round's temporaries die before the write is awaited.
   */
  const plan = (at: number, stored: Map<string, Uint8Array>) => {
    seen = { revision: cache.revision, state: cache.state };
    const servedNow = servedProjections(cache);
    const { services, changes, settle } = serviceWrites(place, servedNow, stored, {
      cache,
      agents,
      localDigests: local?.digests() ?? new Map(),
      encoder,
    });
    const header = replicaHeader(
      {
        cluster,
        replica,
        heartbeatMs,
        synced: cache.state === "synced",
        revision: cache.revision,
        controlCluster: options.controlCluster,
        localSource: local !== undefined,
        services,
        agents: agents.totals((service) => servedNow?.get(service)),
      },
      at,
    );
    const withHeader = changes.length > 0 || headerDue(lastHeader, header, at, heartbeatMs);
    if (withHeader) {
      const value = toBinary(ImportStatusReplicaSchema, header);
      changes.push({ type: "put", key: replicaHeaderKey(prefix, cluster, replica), value });
    }
    return { settle, changes, header: withHeader ? header : undefined };
  };

  /** One round: reads its own old values the first time, then writes what {@link plan} says. */
  const publish = async (): Promise<void> => {
    if (written === undefined) {
      const own = await readOwnValues(store, place);
      written = own.values;
      lastHeader = own.header;
    }
    const at = now();
    const { settle, changes, header } = plan(at, written);
    await write(changes);
    settle();
    if (header !== undefined) {
      lastHeader = { header, atMs: at };
      await collectStale(at);
    }
  };

  /** Deletes the own cluster's replicas that stopped publishing long ago. */
  const collectStale = async (at: number): Promise<void> => {
    for (const dead of deadReplicaKeys(feed, place, at, heartbeatMs)) {
      await write(dead.keys.map((key) => ({ type: "delete" as const, key })));
      logger.info(
        { replica: dead.replica, keys: dead.keys.length },
        "deleted a dead replica's status",
      );
    }
  };

  const flush = async (): Promise<void> => {
    if (!running || flushing !== undefined) return;
    dirty = false;
    lastTickAtMs = now();
    flushing = publish().then(
      () => {
        const done = waiters;
        waiters = [];
        for (const resolve of done) resolve();
      },
      (error: unknown) => {
        dirty = true;
        logger.warn({ err: error }, "cannot publish the import status; retrying");
      },
    );
    await flushing;
    flushing = undefined;
    schedule();
  };

  return {
    start() {
      if (running) return;
      running = true;
      removers.push(agents.onChange(changed));
      if (local !== undefined) removers.push(local.onChange(changed));
      schedule();
    },
    async stop() {
      running = false;
      clearTimeout(timer);
      for (const remove of removers.splice(0)) remove();
      await flushing;
    },
    whenFlushed: () => new Promise((resolve) => waiters.push(resolve)),
  };
}

/** Registers the publisher's metrics; returns the write counter. */
function publisherMetrics(registry: Registry, services: () => number) {
  const writes = new Counter({
    name: "aether_config_import_status_writes_total",
    help: "Import status write batches (header and service values), by result (ok, error).",
    labelNames: ["result"] as const,
    registers: [registry],
  });
  writes.inc({ result: "ok" }, 0);
  writes.inc({ result: "error" }, 0);
  new Gauge({
    name: "aether_config_import_status_services",
    help: "ServiceImportStatus values this replica publishes.",
    registers: [registry],
    collect() {
      this.set(services());
    },
  });
  return writes;
}
