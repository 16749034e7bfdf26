/**
 * The config follower: keeps the agent's imported state (every accepted
 * origin's projection of the dependency set, and the registrar revision it
 * is consistent with) up to date from a registrar, push first.
 *
 * - **Watch**: `WatchConfig` for exactly the dependency set, view
 *   ALL_ORIGINS (the agent resolves trust and conflicts itself), resuming
 *   from the last revision applied. Events before SYNCED are buffered and
 *   applied together when SYNCED arrives, so a partial snapshot is never
 *   applied: SYNCED(resumed=false) replaces the state, SYNCED(resumed=true)
 *   applies the replayed changes to it. After SYNCED every UPSERT and DELETE
 *   is applied as it comes; KEEPALIVE only advances the resume point.
 * - **Dead streams**: a stream silent for the keep-alive timeout is
 *   abandoned (and the connection reported dead); a stream that fails,
 *   ends, or breaks the protocol (garbage) is re-established after an
 *   exponential backoff with jitter. The state is never touched by a
 *   failure: last-known config keeps being served.
 * - **Poll fallback**: from the first failure until a new stream has
 *   synced, `ListAllConfig` (ALL_ORIGINS, the dependency set, every page at
 *   one revision) runs every poll interval (± 10 % jitter); a complete listing replaces the
 *   state, and a successful poll retries the stream at once. Mode `poll`
 *   only polls.
 * - **Checks**: every received projection goes through
 *   {@link checkReceived} (requested service, well-formed event, shared
 *   import policy). A rejected one is reported (once per origin, service,
 *   version and reason) and never applied: it neither replaces nor removes
 *   the projection held for its origin and service.
 * - **Dependency set changes** re-subscribe with a fresh snapshot; the old
 *   state is kept (and served) until the new one is complete. An empty set
 *   watches and polls nothing.
 */
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import {
  type ConfigService,
  ConfigView,
  type WatchConfigResponse,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import type { ImportCandidate, ImportPolicy } from "../../services/common/import-policy.js";
import { type Backoff, createBackoff } from "../../services/runtime/backoff.js";
import { createSilentLogger, type Logger } from "../../services/runtime/logger.js";
import { wakeableSleep } from "../../services/runtime/sleep.js";
import type { FollowMode, ImportOperation, StreamEventType } from "./agent-metrics.js";
import { candidateKey, checkReceived, type ReceivedRejection } from "./received-projection.js";

/** The part of the generated ConfigService client the follower uses. */
export type FollowerClient = Pick<Client<typeof ConfigService>, "watchConfig" | "listAllConfig">;

/** The imported state: complete for a dependency set, at a registrar revision. */
export interface FollowerState {
  /** The dependency set the state is complete for, sorted. */
  readonly services: readonly string[];
  /** The registrar store revision the state is consistent with. */
  readonly revision: bigint;
  /** Every accepted origin's projection, keyed by {@link candidateKey}. */
  readonly candidates: ReadonlyMap<string, ImportCandidate>;
}

/** A new state, and how it came. */
export interface FollowerUpdate {
  /** The new state. */
  readonly state: FollowerState;
  /** A stream snapshot or resume (`synced`), a streamed change (`change`), or a poll (`poll`). */
  readonly via: "synced" | "change" | "poll";
  /** The candidates whose version the previous state did not hold (new content). */
  readonly fresh: readonly ImportCandidate[];
  /** True when there was no previous state (neither from the cache nor received). */
  readonly first: boolean;
}

/** Callbacks through which the follower reports what it does. */
export interface FollowerObserver {
  /** A new state was applied. */
  onUpdate?(update: FollowerUpdate): void;
  /** A received projection was refused (reported once per origin, service, version and reason). */
  onRejection?(rejection: ReceivedRejection): void;
  /** A WatchConfig event was received. */
  onStreamEvent?(type: StreamEventType): void;
  /** A stream ended or failed and will be re-established. */
  onReconnect?(): void;
  /** The follower switched between the stream and polling. */
  onModeChange?(mode: FollowMode): void;
  /** A stream or a poll failed. */
  onError?(operation: ImportOperation, error: Error): void;
  /** A poll finished. */
  onPoll?(result: "ok" | "error"): void;
  /**
   * A stream stayed silent past the keep-alive timeout: the connection under
   * it is probably dead (a partition, a frozen peer). The owner of the
   * transport should drop the connection so the next call opens a new one.
   */
  onDeadConnection?(): void;
}

/** Options of {@link createConfigFollower}. */
export interface ConfigFollowerOptions {
  /** The generated ConfigService client (or a fake with the same two methods). */
  readonly client: FollowerClient;
  /** The import policy every received projection is checked with. */
  readonly policy: ImportPolicy;
  /** The initial dependency set. */
  readonly services: Iterable<string>;
  /** `watch` (default): stream, polling only while it is down; `poll`: poll only. */
  readonly mode?: FollowMode;
  /** The polling period in milliseconds; default 10000. */
  readonly pollIntervalMs?: number;
  /** How long a stream may stay silent before it counts as dead, in milliseconds; default 45000. */
  readonly keepaliveTimeoutMs?: number;
  /** The timeout of each ListAllConfig page request, in milliseconds; default 10000. */
  readonly requestTimeoutMs?: number;
  /** The reconnect delays; default 200 ms doubling to 5 s, with jitter. */
  readonly backoff?: Backoff;
  /** The ListAllConfig page size; default 1000 (the most the registrar allows). */
  readonly pageSize?: number;
  /** A state to start from (the last-known cache); it is not reported through `onUpdate`. */
  readonly initial?: FollowerState;
  /** Where the follower reports what it does. */
  readonly observer?: FollowerObserver;
  /** Logger; silent by default. */
  readonly logger?: Logger;
  /** Uniform numbers in [0, 1) for the poll jitter; default `Math.random`. */
  readonly random?: () => number;
}

/** A running follower. */
export interface ConfigFollower {
  /** The current state; undefined until a cache or a first complete state. */
  readonly state: FollowerState | undefined;
  /** `watch` while streaming (or trying to), `poll` while polling. */
  readonly mode: FollowMode;
  /** The dependency set being followed, sorted. */
  readonly services: readonly string[];
  /** Starts following. Idempotent. */
  start(): void;
  /**
   * Changes the dependency set. A different set re-subscribes at once with a
   * fresh snapshot; the current state stays until the new one is complete.
   */
  setServices(services: Iterable<string>): void;
  /** Stops following: cancels the stream and polls; resolves once they ended. */
  stop(): Promise<void>;
}

/** The default first reconnect delay (before jitter), in milliseconds. */
export const DEFAULT_BACKOFF_INITIAL_MS = 200;
/** The default cap on the reconnect delay (before jitter), in milliseconds. */
export const DEFAULT_BACKOFF_MAX_MS = 5_000;

/**
 * Creates the reconnect backoff: the shared exponential backoff (the export
 * controller's), doubling from `initialMs` (default 200 ms) to `maxMs`
 * (default 5 s), each delay jittered uniformly between half the base delay
 * and the whole of it, so a fleet of agents that lost one registrar does not
 * reconnect in lockstep. The cap is low because a reconnect is cheap (a
 * refused connection, or a snapshot of the dependency set from the
 * registrar's cache) and because it bounds how long after a restarted
 * registrar is back its agents find it. `random` is for tests.
 */
export function createReconnectBackoff(
  options: { initialMs?: number; maxMs?: number; random?: () => number } = {},
): Backoff {
  return createBackoff({
    initialMs: options.initialMs ?? DEFAULT_BACKOFF_INITIAL_MS,
    maxMs: options.maxMs ?? DEFAULT_BACKOFF_MAX_MS,
    ...(options.random === undefined ? {} : { random: options.random }),
  });
}

/** The registrar broke the WatchConfig or ListAllConfig contract. */
export class ProtocolError extends Error {
  override readonly name = "ProtocolError";
}

/**
 * Each poll period is the interval times a factor drawn uniformly from
 * 1 ± this, so a fleet of agents that started (or lost their registrar)
 * together does not poll in lockstep.
 */
const POLL_JITTER = 0.1;

/** The longest snapshot (events before SYNCED) the follower buffers. */
const MAX_BUFFERED_EVENTS = 200_000;
/** The most distinct rejected projections remembered for de-duplicating reports. */
const MAX_REMEMBERED_REJECTIONS = 10_000;

/** A received change, from a stream event or a listing. */
interface Received {
  readonly kind: "put" | "delete";
  readonly origin: string;
  readonly service: string;
  readonly projection: ServiceConfigProjection | undefined;
}

const EVENT_LABELS: Record<number, StreamEventType> = {
  [WatchEventType.SNAPSHOT]: "snapshot",
  [WatchEventType.SYNCED]: "synced",
  [WatchEventType.UPSERT]: "upsert",
  [WatchEventType.DELETE]: "delete",
  [WatchEventType.KEEPALIVE]: "keepalive",
};

function fromEvent(event: WatchConfigResponse): Received {
  return {
    kind: event.type === WatchEventType.DELETE ? "delete" : "put",
    origin: event.originCluster,
    service: event.service,
    projection: event.projection,
  };
}

function normalize(services: Iterable<string>): string[] {
  return [...new Set(services)].sort();
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** Creates a follower; nothing runs until `start()`. */
export function createConfigFollower(options: ConfigFollowerOptions): ConfigFollower {
  const { client, policy } = options;
  const configuredMode = options.mode ?? "watch";
  const pollIntervalMs = options.pollIntervalMs ?? 10_000;
  const random = options.random ?? Math.random;
  const keepaliveTimeoutMs = options.keepaliveTimeoutMs ?? 45_000;
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const pageSize = options.pageSize ?? 1000;
  const backoff = options.backoff ?? createReconnectBackoff();
  const observer = options.observer ?? {};
  const logger = options.logger ?? createSilentLogger();

  let services = normalize(options.services);
  let requested: ReadonlySet<string> = new Set(services);
  let state: FollowerState | undefined = options.initial;
  /** The resume point: the state's revision, advanced by later events and keep-alives. */
  let appliedRevision = state?.revision ?? 0n;
  let mode: FollowMode = configuredMode;
  const rejected = new Map<string, string>();
  let cycle: AbortController | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  /** The fallback poller while one runs. */
  let poller: { controller: AbortController; done: Promise<void> } | undefined;
  /** Wakes the reconnect wait early (after a successful poll). */
  let wakeReconnect: (() => void) | undefined;
  /** Consecutive failures, so that a long outage logs once at warn, then at debug. */
  const failures = { watch: 0, poll: 0 };

  /** Logs a failure: the first of a run (or a new kind of error) at warn, repeats at debug. */
  const logFailure = (operation: ImportOperation, message: string, fields: object) => {
    failures[operation]++;
    const level = failures[operation] === 1 ? "warn" : "debug";
    logger[level]({ ...fields, failures: failures[operation] }, message);
  };

  const setMode = (next: FollowMode) => {
    if (mode === next) return;
    mode = next;
    observer.onModeChange?.(next);
  };

  const reportRejection = (key: string, rejection: ReceivedRejection) => {
    const tag = `${rejection.reason}\u0000${rejection.version}`;
    if (rejected.get(key) === tag) return;
    if (rejected.size >= MAX_REMEMBERED_REJECTIONS) rejected.clear();
    rejected.set(key, tag);
    logger.warn(
      { origin: rejection.origin, service: rejection.service, reason: rejection.reason },
      `projection rejected: ${rejection.message}`,
    );
    observer.onRejection?.(rejection);
  };

  /**
   * Applies one received change to `target`. A rejected put keeps whatever
   * `previous` held for its key (a rejection is never applied, not even as a
   * removal); a delete outside the requested set is refused.
   */
  const applyReceived = (
    target: Map<string, ImportCandidate>,
    received: Received,
    previous: ReadonlyMap<string, ImportCandidate>,
  ) => {
    const key = candidateKey(received.origin, received.service);
    if (received.kind === "delete") {
      const problem = !requested.has(received.service)
        ? ("not_requested" as const)
        : received.origin === ""
          ? ("malformed_event" as const)
          : undefined;
      if (problem !== undefined) {
        reportRejection(key, {
          origin: received.origin,
          service: received.service,
          version: "",
          reason: problem,
          message: `DELETE of ${JSON.stringify(received.service)} from ${JSON.stringify(received.origin)} refused (${problem})`,
        });
        return;
      }
      target.delete(key);
      rejected.delete(key);
      return;
    }
    const result = checkReceived(received, requested, policy);
    if (result.rejection !== undefined) {
      reportRejection(key, result.rejection);
      const kept = previous.get(key);
      if (kept !== undefined && requested.has(received.service)) target.set(key, kept);
      return;
    }
    rejected.delete(key);
    target.set(key, result.candidate);
  };

  const commit = (
    candidates: Map<string, ImportCandidate>,
    revision: bigint,
    via: FollowerUpdate["via"],
  ) => {
    const previous = state?.candidates;
    const fresh = [...candidates.entries()]
      .filter(([key, c]) => previous?.get(key)?.projection.version !== c.projection.version)
      .map(([, c]) => c);
    appliedRevision = revision;
    state = { services, revision, candidates };
    observer.onUpdate?.({ state, via, fresh, first: previous === undefined });
  };

  /** Applies the events buffered before SYNCED, as one state. */
  const applySynced = (synced: WatchConfigResponse, buffered: Received[], resume: bigint) => {
    const previous = state?.candidates ?? new Map<string, ImportCandidate>();
    let next: Map<string, ImportCandidate>;
    if (synced.resumed) {
      if (resume === 0n || state === undefined) {
        throw new ProtocolError(
          "SYNCED says the stream resumed, but the agent asked for a snapshot",
        );
      }
      if (synced.revision < appliedRevision) {
        throw new ProtocolError(
          `SYNCED resumed at revision ${synced.revision}, before the resume point ${appliedRevision}`,
        );
      }
      next = new Map(previous);
    } else {
      next = new Map();
    }
    for (const received of buffered) applyReceived(next, received, previous);
    commit(next, synced.revision, "synced");
  };

  /** Applies one change received after SYNCED. */
  const applyChange = (event: WatchConfigResponse) => {
    if (event.revision < appliedRevision) {
      throw new ProtocolError(
        `${WatchEventType[event.type]} at revision ${event.revision} after revision ${appliedRevision}`,
      );
    }
    const current = state?.candidates ?? new Map<string, ImportCandidate>();
    const next = new Map(current);
    applyReceived(next, fromEvent(event), current);
    const changed =
      next.size !== current.size || [...next].some(([key, value]) => current.get(key) !== value);
    if (changed) commit(next, event.revision, "change");
    else appliedRevision = event.revision;
  };

  /** What one stream attempt came to. */
  interface StreamOutcome {
    /** Whether the stream reached SYNCED. */
    readonly synced: boolean;
    /** Why it failed; undefined when it ended normally or was cancelled. */
    readonly error: Error | undefined;
  }

  /** Runs one WatchConfig stream until it ends, fails, goes silent or `signal` aborts. */
  const streamOnce = async (signal: AbortSignal): Promise<StreamOutcome> => {
    const call = new AbortController();
    const cancel = () => call.abort();
    signal.addEventListener("abort", cancel, { once: true });
    let silent = false;
    const watchdog = setTimeout(() => {
      silent = true;
      call.abort();
    }, keepaliveTimeoutMs);
    const resume = state !== undefined && sameList(state.services, services) ? appliedRevision : 0n;
    let synced = false;
    let buffered: Received[] = [];
    try {
      const stream = client.watchConfig(
        { services, resumeRevision: resume, view: ConfigView.ALL_ORIGINS },
        { signal: call.signal },
      );
      for await (const event of stream) {
        watchdog.refresh();
        observer.onStreamEvent?.(EVENT_LABELS[event.type] ?? "unknown");
        switch (event.type) {
          case WatchEventType.SNAPSHOT:
          case WatchEventType.UPSERT:
          case WatchEventType.DELETE:
            if (synced && event.type !== WatchEventType.SNAPSHOT) applyChange(event);
            else if (synced) throw new ProtocolError("SNAPSHOT event after SYNCED");
            else if (buffered.length >= MAX_BUFFERED_EVENTS) {
              throw new ProtocolError(`more than ${MAX_BUFFERED_EVENTS} events before SYNCED`);
            } else buffered.push(fromEvent(event));
            break;
          case WatchEventType.SYNCED:
            if (synced) throw new ProtocolError("a second SYNCED event");
            applySynced(event, buffered, resume);
            buffered = [];
            synced = true;
            onStreamSynced(event.resumed);
            break;
          case WatchEventType.KEEPALIVE:
            if (synced && event.revision > appliedRevision) appliedRevision = event.revision;
            break;
          default:
            break; // an event type this agent does not know: newer registrars may send it
        }
      }
      return { synced, error: undefined };
    } catch (error) {
      if (signal.aborted) return { synced, error: undefined };
      if (silent) {
        observer.onDeadConnection?.();
        return {
          synced,
          error: new Error(
            `no event for ${keepaliveTimeoutMs} ms: the stream is dead (keep-alive timeout)`,
          ),
        };
      }
      return { synced, error: asError(error) };
    } finally {
      clearTimeout(watchdog);
      signal.removeEventListener("abort", cancel);
      call.abort();
    }
  };

  const onStreamSynced = (resumed: boolean) => {
    backoff.reset();
    const wasPolling = poller !== undefined;
    stopPoller();
    setMode("watch");
    const fields = {
      revision: String(appliedRevision),
      resumed,
      services: services.length,
      failures: failures.watch,
    };
    if (wasPolling || failures.watch > 0) logger.info(fields, "stream is back; polling stopped");
    else logger.debug(fields, "stream synced");
    failures.watch = 0;
  };

  /** Lists every page of the dependency set's projections at one revision. */
  const listAll = async (signal: AbortSignal): Promise<{ revision: bigint; list: Received[] }> => {
    for (let attempt = 0; ; attempt++) {
      const list: Received[] = [];
      let revision: bigint | undefined;
      let pageToken = "";
      try {
        do {
          const page = await client.listAllConfig(
            { services, view: ConfigView.ALL_ORIGINS, pageSize, pageToken },
            { signal, timeoutMs: requestTimeoutMs },
          );
          revision ??= page.revision;
          if (page.revision !== revision) {
            throw new ProtocolError(
              `pages of one listing at revisions ${revision} and ${page.revision}`,
            );
          }
          for (const projection of page.projections) {
            list.push({
              kind: "put",
              origin: projection.originCluster,
              service: projection.service,
              projection,
            });
          }
          pageToken = page.nextPageToken;
        } while (pageToken !== "");
        return { revision: revision ?? 0n, list };
      } catch (error) {
        // The listing's revision was compacted between pages: list again.
        if (ConnectError.from(error).code !== Code.OutOfRange || attempt >= 2) throw error;
      }
    }
  };

  /** Polls once; resolves true when a complete listing was applied. */
  const pollOnce = async (signal: AbortSignal): Promise<boolean> => {
    try {
      const { revision, list } = await listAll(signal);
      if (signal.aborted) return false;
      const previous = state?.candidates ?? new Map<string, ImportCandidate>();
      const next = new Map<string, ImportCandidate>();
      for (const received of list) applyReceived(next, received, previous);
      commit(next, revision, "poll");
      if (failures.poll > 0) logger.info({ failures: failures.poll }, "poll succeeded again");
      failures.poll = 0;
      observer.onPoll?.("ok");
      return true;
    } catch (error) {
      if (signal.aborted) return false;
      const failure = asError(error);
      observer.onPoll?.("error");
      observer.onError?.("poll", failure);
      logFailure("poll", "poll failed; keeping the last-known config", { err: failure.message });
      return false;
    }
  };

  /** Polls every interval until `signal` aborts; `onSuccess` runs after each applied listing. */
  const pollLoop = async (signal: AbortSignal, onSuccess?: () => void): Promise<void> => {
    while (!signal.aborted) {
      if (await pollOnce(signal)) onSuccess?.();
      await wakeableSleep(pollIntervalMs * (1 - POLL_JITTER + 2 * POLL_JITTER * random()), signal)
        .done;
    }
  };

  const startPoller = (parent: AbortSignal) => {
    if (poller !== undefined || parent.aborted) return;
    const controller = new AbortController();
    const abort = () => controller.abort();
    parent.addEventListener("abort", abort, { once: true });
    setMode("poll");
    logger.warn({ pollIntervalMs }, "stream down: polling until it is back");
    const done = pollLoop(controller.signal, () => wakeReconnect?.()).finally(() =>
      parent.removeEventListener("abort", abort),
    );
    poller = { controller, done };
  };

  const stopPoller = () => {
    poller?.controller.abort();
    poller = undefined;
  };

  /** Streams, and on every failure polls while waiting to reconnect. */
  const watchLoop = async (signal: AbortSignal): Promise<void> => {
    while (!signal.aborted) {
      const outcome = await streamOnce(signal);
      if (signal.aborted) return;
      observer.onReconnect?.();
      if (outcome.error !== undefined) {
        observer.onError?.("watch", outcome.error);
        logFailure("watch", "stream failed; keeping the last-known config", {
          err: outcome.error.message,
          synced: outcome.synced,
        });
      } else {
        logger.info({ synced: outcome.synced }, "stream ended by the registrar; reconnecting");
      }
      startPoller(signal);
      const sleep = wakeableSleep(backoff.next(), signal);
      wakeReconnect = sleep.wake;
      await sleep.done;
      wakeReconnect = undefined;
    }
  };

  const idle = (signal: AbortSignal) => wakeableSleep(2 ** 31 - 1, signal).done;

  const loop = async (): Promise<void> => {
    while (!stopped) {
      const controller = new AbortController();
      cycle = controller;
      try {
        if (services.length === 0) {
          setMode(configuredMode);
          await idle(controller.signal);
        } else if (configuredMode === "poll") {
          await pollLoop(controller.signal);
        } else {
          setMode("watch");
          await watchLoop(controller.signal);
        }
      } catch (error) {
        logger.error({ err: error }, "follower loop failed; restarting it");
        await wakeableSleep(backoff.next(), controller.signal).done;
      } finally {
        const current = poller;
        stopPoller();
        await current?.done;
      }
    }
  };

  return {
    get state() {
      return state;
    },
    get mode() {
      return mode;
    },
    get services() {
      return services;
    },
    start() {
      if (running !== undefined || stopped) return;
      running = loop();
    },
    setServices(next) {
      const normalized = normalize(next);
      if (sameList(normalized, services)) return;
      services = normalized;
      requested = new Set(normalized);
      logger.info({ services: normalized.length }, "dependency set changed; re-subscribing");
      cycle?.abort();
    },
    async stop() {
      stopped = true;
      cycle?.abort();
      await running;
    },
  };
}
