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
 *   one revision) runs every poll interval (± 10 % jitter); a complete
 *   listing replaces the state, and a successful poll retries the stream
 *   at once. Mode `poll` only polls.
 * - **Checks**: every received projection goes through
 *   {@link checkReceived} (requested service, well-formed event, shared
 *   import policy), then the rollback marks (an older version of an
 *   origin's service than one accepted before is `rollback`). A rejected
 *   one is reported (once per origin, service, version and reason) and
 *   never applied: it neither replaces nor removes the projection held for
 *   its origin and service.
 * - **No silent loss**: every delete a new state applies is
 *   logged and reported (`onLoss`); a complete state that lacks too many of
 *   the held projections at once keeps them, held (`vanish-guard.ts`), until
 *   the registrar has them again, deletes them explicitly, or still lacks
 *   them after the hold (a keep-alive on a live stream confirms that).
 * - **Dependency set changes** re-subscribe with a fresh snapshot; the old
 *   state is kept (and served) until the new one is complete. An empty set
 *   watches and polls nothing. A **resync** does the same for the same set
 *   (the agent's origin keys gained a key: what was refused may pass now).
 *
 * This file is the shell's wiring: one cycle per dependency set, and the
 * follow mode's effects carried out. The decisions are pure cores: the
 * stream protocol in `watch-session.ts`, the application of received
 * changes in `candidate-set.ts`, the switching between stream, backoff and
 * polling in `follow-mode.ts`. The held state is `imported-state.ts`; the
 * loops and client calls are `watch-loop.ts` and `watch-stream.ts` (with the
 * keep-alive watchdog), `config-poller.ts` and `config-listing.ts`.
 */
import type { Client } from "@connectrpc/connect";
import type { ConfigService } from "../../../gen/aether/registry/v1/config_service_pb.js";
import type { ImportPolicy } from "../../../services/common/import-policy.js";
import { type Backoff, createBackoff } from "../../../services/runtime/backoff.js";
import { createSilentLogger, type Logger } from "../../../services/runtime/logger.js";
import { wakeableSleep } from "../../../services/runtime/sleep.js";
import type { FollowMode, ImportOperation, StreamEventType } from "../agent-metrics.js";
import { createConfigPoller } from "./config-poller.js";
import {
  type FollowEvent,
  type FollowState,
  type FollowTransition,
  INITIAL_FOLLOW_STATE,
  observedMode,
  transition,
} from "./follow-mode.js";
import { createImportedState, type FollowerState, type FollowerUpdate } from "./imported-state.js";
import type { LossReport } from "./loss-report.js";
import type { ReceivedRejection } from "./received-projection.js";
import type { HeldCandidate, VanishGuardOptions } from "./vanish-guard.js";
import { createWatchLoop } from "./watch-loop.js";

export type { FollowerState, FollowerUpdate } from "./imported-state.js";
export { DEFAULT_MASS_DELETE_HOLD_MS } from "./imported-state.js";
export type { LossReport } from "./loss-report.js";
export { ProtocolError } from "./protocol-error.js";
export type { HeldCandidate, VanishGuardOptions } from "./vanish-guard.js";

/** The part of the generated ConfigService client the follower uses. */
export type FollowerClient = Pick<Client<typeof ConfigService>, "watchConfig" | "listAllConfig">;

/** Callbacks through which the follower reports what it does. */
export interface FollowerObserver {
  /** A new state was applied. */
  onUpdate?(update: FollowerUpdate): void;
  /** A received projection was refused (reported once per origin, service, version and reason). */
  onRejection?(rejection: ReceivedRejection): void;
  /** A new state deleted, rolled back, held or released imported projections. */
  onLoss?(report: LossReport): void;
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
  /**
   * The registrar's stream started or stopped saying that the registrar
   * cannot reach its store and serves the view it kept (see
   * {@link ConfigFollower.registrarStoreUnavailable}).
   */
  onRegistrarStore?(unavailable: boolean): void;
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
  /**
   * The guard against a mass disappearance in a complete state (see
   * `vanish-guard.ts`); default more than 50% and at least 3, held 10 minutes.
   */
  readonly guard?: VanishGuardOptions;
  /** The clock of the guard's holds, in milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
}

/** A running follower. */
export interface ConfigFollower {
  /** The current state; undefined until a cache or a first complete state. */
  readonly state: FollowerState | undefined;
  /** `watch` while streaming (or trying to), `poll` while polling. */
  readonly mode: FollowMode;
  /** The dependency set being followed, sorted. */
  readonly services: readonly string[];
  /** The candidates kept although the registrar's state lacks them (see `vanish-guard.ts`). */
  readonly held: ReadonlyMap<string, HeldCandidate>;
  /**
   * Whether the current stream's last SYNCED or KEEPALIVE said the registrar
   * cannot reach its store (it serves the view it kept through the loss);
   * false without a stream.
   */
  readonly registrarStoreUnavailable: boolean;
  /** Starts following. Idempotent. */
  start(): void;
  /**
   * Changes the dependency set. A different set re-subscribes at once with a
   * fresh snapshot; the current state stays until the new one is complete.
   */
  setServices(services: Iterable<string>): void;
  /**
   * Re-subscribes to the same dependency set with a fresh snapshot (not a
   * resume), at once or, before `start()`, on the first stream; the current
   * state stays until the new one is complete. For a change of what the
   * checks accept (an origin key added): a projection refused before is
   * sent again and checked again; refused again, the held one stays.
   */
  resync(reason: string): void;
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

function normalize(services: Iterable<string>): string[] {
  return [...new Set(services)].sort();
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

/** Creates a follower; nothing runs until `start()`. */
export function createConfigFollower(options: ConfigFollowerOptions): ConfigFollower {
  const configuredMode = options.mode ?? "watch";
  const backoff = options.backoff ?? createReconnectBackoff();
  const observer = options.observer ?? {};
  const logger = options.logger ?? createSilentLogger();

  const imported = createImportedState({
    policy: options.policy,
    services: normalize(options.services),
    initial: options.initial,
    logger,
    onUpdate: (update) => observer.onUpdate?.(update),
    onRejection: (rejection) => observer.onRejection?.(rejection),
    onLoss: (report) => observer.onLoss?.(report),
    ...(options.guard === undefined ? {} : { guard: options.guard }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  const poller = createConfigPoller({
    client: options.client,
    imported,
    pageSize: options.pageSize ?? 1000,
    requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
    intervalMs: options.pollIntervalMs ?? 10_000,
    random: options.random ?? Math.random,
    logger,
    onPoll: (result) => observer.onPoll?.(result),
    onError: (operation, error) => observer.onError?.(operation, error),
    onSuccess: () => dispatch({ type: "poll-succeeded" }),
  });
  const watchLoop = createWatchLoop({
    client: options.client,
    imported,
    keepaliveTimeoutMs: options.keepaliveTimeoutMs ?? 45_000,
    backoff,
    logger,
    follow: (event) => dispatch(event),
    onStreamEvent: (type) => observer.onStreamEvent?.(type),
    onReconnect: () => observer.onReconnect?.(),
    onError: (operation, error) => observer.onError?.(operation, error),
    onDeadConnection: () => observer.onDeadConnection?.(),
    onRegistrarStore: (unavailable) => {
      if (unavailable === registrarStoreUnavailable) return;
      registrarStoreUnavailable = unavailable;
      observer.onRegistrarStore?.(unavailable);
    },
  });
  let registrarStoreUnavailable = false;
  let follow: FollowState = INITIAL_FOLLOW_STATE;
  let mode: FollowMode = configuredMode;
  let cycle: AbortController | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  /** Steps the follow mode, reports a mode change, and carries out the effects. */
  const dispatch = (event: FollowEvent): FollowTransition => {
    const next = transition(follow, event);
    follow = next.state;
    const shown = observedMode(follow, configuredMode);
    if (shown !== mode) {
      mode = shown;
      observer.onModeChange?.(shown);
    }
    for (const effect of next.effects) {
      if (effect.type === "start-poller") {
        if (cycle !== undefined) poller.startFallback(cycle.signal);
      } else if (effect.type === "stop-poller") void poller.stopFallback();
      else if (effect.type === "reset-backoff") backoff.reset();
      else if (effect.type === "wake-reconnect") watchLoop.wake();
      else cycle?.abort(); // restart-cycle
    }
    return next;
  };

  /** One cycle per dependency set, until stopped. */
  const loop = async (): Promise<void> => {
    while (!stopped) {
      const controller = new AbortController();
      cycle = controller;
      try {
        dispatch({ type: "cycle", services: imported.services.length, configured: configuredMode });
        if (follow.kind === "idle") await wakeableSleep(2 ** 31 - 1, controller.signal).done;
        else if (follow.kind === "poll") await poller.run(controller.signal);
        else await watchLoop.run(controller.signal);
      } catch (error) {
        logger.error({ err: error }, "follower loop failed; restarting it");
        await wakeableSleep(backoff.next(), controller.signal).done;
      } finally {
        await poller.stopFallback();
      }
    }
  };

  return {
    get state() {
      return imported.state;
    },
    get mode() {
      return mode;
    },
    get registrarStoreUnavailable() {
      return registrarStoreUnavailable;
    },
    get services() {
      return imported.services;
    },
    get held() {
      return imported.held;
    },
    start() {
      if (running !== undefined || stopped) return;
      running = loop();
    },
    setServices(next) {
      const normalized = normalize(next);
      if (sameList(normalized, imported.services)) return;
      imported.setServices(normalized);
      logger.info({ services: normalized.length }, "dependency set changed; re-subscribing");
      dispatch({ type: "services-changed" });
    },
    resync(reason) {
      imported.wantSnapshot();
      logger.info({ reason }, "re-subscribing with a fresh snapshot");
      dispatch({ type: "resync" });
    },
    async stop() {
      stopped = true;
      cycle?.abort();
      await running;
    },
  };
}
