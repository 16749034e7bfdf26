/**
 * The status feed (the {@link StatusFeed} of fleet-inputs.ts): every
 * cluster's published import status, listed once and then watched from the
 * listing's revision; a watch that ends (compaction, an unreachable store)
 * is followed by a new listing after `retryMs`, which replaces what was held.
 */
import type {
  ImportStatusReplica,
  ServiceImportStatus,
} from "../../../gen/aether/registry/v1/fleet_pb.js";
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import type { StoreWatch } from "../store/config-store.js";
import type { StatusEntry, StatusEvent, StatusStore } from "../store/status-store.js";
import type { StatusFeed } from "./fleet-inputs.js";

/** Options of {@link createStatusFeed}. */
export interface StatusFeedOptions {
  /** The store to read every cluster's status from. */
  readonly store: Pick<StatusStore, "list" | "watch">;
  /** The reader's clock (milliseconds since the epoch); default `Date.now`. */
  readonly now?: () => number;
  /** How long to wait before listing again after a failure; default 1000 ms. */
  readonly retryMs?: number;
  /** Logger; silent by default. */
  readonly logger?: Logger;
}

/** A {@link StatusFeed} that can be started and stopped. */
export interface RunningStatusFeed extends StatusFeed {
  /** Lists and starts watching; retries by itself until stopped. */
  start(): void;
  /** Stops watching; no listener is called afterwards. */
  stop(): Promise<void>;
}

/** A replica as the feed holds it (mutable inside the feed only). */
interface HeldReplica {
  cluster: string;
  replica: string;
  header: ImportStatusReplica | undefined;
  services: Map<string, ServiceImportStatus>;
  seenAtMs: number;
}

/** Creates a feed over a status store; nothing is read until `start()`. */
export function createStatusFeed(options: StatusFeedOptions): RunningStatusFeed {
  const { store } = options;
  const now = options.now ?? Date.now;
  const retryMs = options.retryMs ?? 1_000;
  const logger = options.logger ?? createSilentLogger();
  const listeners = new Set<() => void>();
  let replicas = new Map<string, HeldReplica>();
  let synced = false;
  let running = false;
  let watch: StoreWatch | undefined;
  let timer: NodeJS.Timeout | undefined;
  /** Bumped by every (re)start, so a late listing or event of an old round is ignored. */
  let round = 0;

  const held = (map: Map<string, HeldReplica>, cluster: string, replica: string): HeldReplica => {
    const id = `${cluster}/${replica}`;
    let found = map.get(id);
    if (found === undefined) {
      found = { cluster, replica, header: undefined, services: new Map(), seenAtMs: now() };
      map.set(id, found);
    }
    return found;
  };
  const apply = (map: Map<string, HeldReplica>, entry: StatusEntry): void => {
    const target = held(map, entry.cluster, entry.replica);
    if (entry.kind === "replica") {
      target.header = entry.header;
      target.seenAtMs = now();
    } else {
      target.services.set(entry.service, entry.status);
    }
  };
  const applyEvent = (event: StatusEvent): void => {
    if (event.type === "put") {
      apply(replicas, event.entry);
      return;
    }
    const id = `${event.key.cluster}/${event.key.replica}`;
    const target = replicas.get(id);
    if (target === undefined) return;
    if (event.key.kind === "replica") target.header = undefined;
    else target.services.delete(event.key.service);
    if (target.header === undefined && target.services.size === 0) replicas.delete(id);
  };
  const notify = (): void => {
    for (const listener of [...listeners]) {
      try {
        listener();
      } catch (error) {
        logger.error({ err: error }, "a status feed listener threw");
      }
    }
  };

  const retry = (mine: number): void => {
    if (!running || mine !== round) return;
    clearTimeout(timer);
    timer = setTimeout(() => void follow(), retryMs);
  };
  const follow = async (): Promise<void> => {
    const mine = ++round;
    let listed: Awaited<ReturnType<StatusStore["list"]>>;
    try {
      listed = await store.list();
    } catch (error) {
      logger.warn({ err: error }, "cannot list the published status; retrying");
      retry(mine);
      return;
    }
    if (!running || mine !== round) return;
    const next = new Map<string, HeldReplica>();
    for (const entry of listed.entries) {
      // A replica seen before keeps when it was last seen to change.
      const before = replicas.get(`${entry.cluster}/${entry.replica}`);
      apply(next, entry);
      const after = next.get(`${entry.cluster}/${entry.replica}`) as HeldReplica;
      if (before !== undefined && sameHeader(before.header, after.header)) {
        after.seenAtMs = before.seenAtMs;
      }
    }
    replicas = next;
    synced = true;
    notify();
    watch = store.watch(listed.revision, {
      onEvents: (events) => {
        if (!running || mine !== round) return;
        for (const event of events) applyEvent(event);
        notify();
      },
      onError: (error) => {
        logger.warn({ err: error }, "the published status watch ended; listing again");
        retry(mine);
      },
    });
  };

  return {
    get synced() {
      return synced;
    },
    replicas: () => replicas.values(),
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    start() {
      if (running) return;
      running = true;
      void follow();
    },
    async stop() {
      running = false;
      round++;
      clearTimeout(timer);
      listeners.clear();
      await watch?.cancel();
    },
  };
}

/** Whether two headers are the same value (both absent counts as the same). */
function sameHeader(
  a: ImportStatusReplica | undefined,
  b: ImportStatusReplica | undefined,
): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    a.publishedTime?.seconds === b.publishedTime?.seconds &&
    a.publishedTime?.nanos === b.publishedTime?.nanos &&
    a.revision === b.revision
  );
}
