/**
 * The export controller: the hub's write path. While this registrar holds
 * the export leadership and its object source is synced, it projects the
 * source's snapshot (`projectServices`), lists the projections the store
 * holds under this registrar's own origin, and reconciles the two: it puts
 * the new and changed projections and deletes the ones no longer exported
 * (including stale ones left by an earlier run).
 *
 * - A projection's `version` is its export time (RFC 3339, nanoseconds, UTC),
 *   bumped only when its content changed; identical content writes nothing.
 *   Versions strictly increase per service, even within one millisecond and
 *   across leaders (a new version is always above the stored one).
 * - Bursts coalesce: a change schedules one debounced reconcile, and changes
 *   during a reconcile cause exactly one more, so each service is written
 *   at most once per burst.
 * - A failed reconcile (store down) is retried with exponential backoff and
 *   jitter until it succeeds; a fenced write (the leadership is gone) ends
 *   the term and the election campaigns again.
 * - Authority: with a control cluster other than this registrar's own
 *   cluster, it does not export at all, and says why once.
 */
import { toBinary } from "@bufbuild/protobuf";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../../gen/aether/registry/v1/projection_pb.js";
import { formatVersion, parseVersion } from "../../common/projection-version.js";
import { projectServices, type RouteRejection, type RouteWarning } from "../../common/projector.js";
import { createSilentLogger, type Logger } from "../logger.js";
import {
  type ConfigStore,
  FencedWriteError,
  type StoredProjection,
  type WriteOptions,
} from "../store/config-store.js";
import { type Backoff, createBackoff } from "./backoff.js";
import { createNoopExportMetrics, type ExportMetrics } from "./export-metrics.js";
import type { LeaderElection, LeaderTerm } from "./leader-election.js";
import type { ObjectSource, SourceProblem } from "./object-source.js";

/** The default debounce of change notifications, in milliseconds. */
export const DEFAULT_EXPORT_DEBOUNCE_MS = 50;

/** Options of {@link createExportController}. */
export interface ExportControllerOptions {
  /** Where the Gateway API objects come from. The controller starts and stops it. */
  readonly source: ObjectSource;
  /** The store to write to; it writes under its own origin only. */
  readonly store: ConfigStore;
  /** This registrar's cluster; must equal `store.origin`. */
  readonly origin: string;
  /** The control cluster; undefined means federated (every registrar exports). */
  readonly controlCluster: string | undefined;
  /** Who may export; the controller starts and stops it. */
  readonly leadership: LeaderElection;
  /** Where exports, rejections and failures are reported; default silent. */
  readonly logger?: Logger;
  /** The metrics to update; default none. */
  readonly metrics?: ExportMetrics;
  /** The current time in nanoseconds since the Unix epoch (for versions); default the system clock. */
  readonly clock?: () => bigint;
  /** How long a change notification waits for more, in milliseconds; default 50. */
  readonly debounceMs?: number;
  /** The longest a steady stream of changes can postpone a reconcile, in milliseconds; default 1000. */
  readonly maxDelayMs?: number;
  /** The first retry delay after a failure, in milliseconds; default 100. */
  readonly retryInitialMs?: number;
  /** The cap on the retry delay, in milliseconds; default 5000. */
  readonly retryMaxMs?: number;
  /** A source of uniform numbers in [0, 1) for retry jitter; default `Math.random`. */
  readonly random?: () => number;
}

/** What the controller is doing; see {@link ExportStatus.state}. */
export type ExportState =
  | "created"
  | "disabled"
  | "standby"
  | "waiting-for-source"
  | "exporting"
  | "retrying"
  | "stopped";

/** A snapshot of the controller's state, for `aetherctl status` and tests. */
export interface ExportStatus {
  /**
   * `disabled` (another cluster is the control cluster), `standby` (not the
   * leader), `waiting-for-source` (leader, source not synced yet),
   * `exporting` (leader, last reconcile succeeded or one is under way),
   * `retrying` (leader, the last reconcile failed), `created` or `stopped`.
   */
  readonly state: ExportState;
  /** Why the controller is disabled; undefined otherwise. */
  readonly disabledReason: string | undefined;
  /** The source's name, for example `dir:/etc/aether/routes` or `kubernetes`. */
  readonly source: string;
  /** Whether this replica holds the export leadership now. */
  readonly leader: boolean;
  /** The current leadership term's number, or undefined when not the leader. */
  readonly term: number | undefined;
  /** The projections exported by the last successful reconcile. */
  readonly services: number;
  /** How many reconciles ran (successful or not) since start. */
  readonly reconciles: number;
  /** How many store writes (puts and deletes) the controller made since start. */
  readonly writes: number;
  /** When the last reconcile succeeded; undefined before the first. */
  readonly lastSuccessAt: Date | undefined;
  /** Why the last reconcile failed; undefined after a success. */
  readonly lastError: string | undefined;
  /** The routes the projector rejected in the last reconcile. */
  readonly rejections: readonly RouteRejection[];
  /** The problems in routes projected anyway, from the last reconcile. */
  readonly warnings: readonly RouteWarning[];
  /** The problems the source reports now (unparsable files, failed watches). */
  readonly sourceProblems: readonly SourceProblem[];
}

/** A running export controller. */
export interface ExportController {
  /** False when another cluster is the control cluster: `start()` then only logs why. */
  readonly enabled: boolean;
  /**
   * Starts the source and the election, and exports while leader. When not
   * enabled, logs once why this registrar does not export, and does nothing
   * else. Idempotent.
   */
  start(): void;
  /**
   * Stops exporting: the leadership is given up (another replica takes over
   * at once), an in-flight reconcile is left to finish or be fenced, and the
   * source is stopped. Idempotent.
   */
  stop(): Promise<void>;
  /** The current state. */
  status(): ExportStatus;
  /**
   * Resolves once no reconcile is running, scheduled or waiting for a retry
   * (immediately when not the leader). For tests and orderly shutdown.
   */
  idle(): Promise<void>;
}

/**
 * Decides whether a registrar of cluster `origin` exports config under the
 * control cluster `controlCluster`: yes when federated (undefined) or when it
 * is the control cluster; otherwise no, with the reason as a sentence.
 */
export function exportAuthority(
  origin: string,
  controlCluster: string | undefined,
): { readonly exports: true } | { readonly exports: false; readonly reason: string } {
  if (controlCluster === undefined || controlCluster === origin) return { exports: true };
  return {
    exports: false,
    reason: `control cluster is ${controlCluster}; this registrar (${origin}) does not export config`,
  };
}

/**
 * Returns the bytes that define a projection's content: its protobuf binary
 * encoding with `version` and `originCluster` cleared. Two projections of a
 * service with equal content bytes export the same routing.
 */
export function projectionContent(projection: ServiceConfigProjection): Uint8Array {
  return toBinary(ServiceConfigProjectionSchema, {
    ...projection,
    version: "",
    originCluster: "",
  });
}

/** Reports whether two projections have the same content (see {@link projectionContent}). */
export function sameContent(a: ServiceConfigProjection, b: ServiceConfigProjection): boolean {
  return Buffer.from(projectionContent(a)).equals(projectionContent(b));
}

/** The system clock in nanoseconds since the Unix epoch (millisecond resolution). */
export function systemClockNanos(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

/** The leadership term ended during a reconcile: stop writing, without counting an error. */
class TermEndedError extends Error {
  override readonly name = "TermEndedError";
}

/** How many store writes one reconcile has in flight at most. */
const WRITE_CONCURRENCY = 8;

/**
 * Creates an export controller; nothing runs until `start()`. Throws a
 * TypeError when `origin` is not the store's origin.
 */
export function createExportController(options: ExportControllerOptions): ExportController {
  const { source, store, origin, leadership } = options;
  if (store.origin !== origin) {
    throw new TypeError(`the store writes under origin ${store.origin}, not ${origin}`);
  }
  const logger = options.logger ?? createSilentLogger();
  const metrics = options.metrics ?? createNoopExportMetrics();
  const clock = options.clock ?? systemClockNanos;
  const debounceMs = options.debounceMs ?? DEFAULT_EXPORT_DEBOUNCE_MS;
  const maxDelayMs = options.maxDelayMs ?? 1_000;
  const backoff: Backoff = createBackoff({
    initialMs: options.retryInitialMs ?? 100,
    maxMs: options.retryMaxMs ?? 5_000,
    ...(options.random === undefined ? {} : { random: options.random }),
  });
  const authority = exportAuthority(origin, options.controlCluster);

  let phase: "created" | "running" | "stopped" = "created";
  let lastIssued = 0n;
  let exportedCount = 0;
  let reconciles = 0;
  let writes = 0;
  let lastSuccessAt: Date | undefined;
  let lastError: string | undefined;
  let failing = false;
  let rejections: RouteRejection[] = [];
  let warnings: RouteWarning[] = [];
  let seenProblems = new Set<string>();

  /** The debounce timer of a scheduled reconcile. */
  let timer: NodeJS.Timeout | undefined;
  /** When the first change the scheduled reconcile covers arrived. */
  let firstPendingAt: number | undefined;
  /** The retry timer after a failed reconcile. */
  let retryTimer: NodeJS.Timeout | undefined;
  /** The reconcile under way. */
  let running: Promise<void> | undefined;
  /** A change arrived during the running reconcile: run once more after it. */
  let again = false;
  let idleWaiters: (() => void)[] = [];
  const unsubscribe: (() => void)[] = [];

  const isIdle = (): boolean =>
    timer === undefined && retryTimer === undefined && running === undefined && !again;
  const notifyIfIdle = (): void => {
    if (!isIdle()) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  };
  const cancelScheduled = (): void => {
    clearTimeout(timer);
    clearTimeout(retryTimer);
    timer = undefined;
    retryTimer = undefined;
    firstPendingAt = undefined;
    again = false;
  };

  /**
   * Schedules a reconcile `delayMs` from now (postponed by later calls, but
   * never past `maxDelayMs` after the first), or once more after the running
   * one. Does nothing while not the leader or while a retry is pending (the
   * retry reads the latest snapshot anyway).
   */
  const schedule = (delayMs: number = debounceMs): void => {
    if (phase !== "running" || leadership.term === undefined || retryTimer !== undefined) return;
    if (running !== undefined) {
      again = true;
      return;
    }
    const now = Date.now();
    firstPendingAt ??= now;
    const due = Math.min(now + delayMs, firstPendingAt + maxDelayMs);
    clearTimeout(timer);
    timer = setTimeout(fire, Math.max(0, due - now));
  };

  const fire = (): void => {
    timer = undefined;
    firstPendingAt = undefined;
    const term = leadership.term;
    if (phase !== "running" || term === undefined) {
      notifyIfIdle();
      return;
    }
    running = runOnce(term).finally(() => {
      running = undefined;
      if (again) {
        again = false;
        schedule();
      }
      notifyIfIdle();
    });
  };

  /** Runs one reconcile for `term` and handles its outcome; never rejects. */
  const runOnce = async (term: LeaderTerm): Promise<void> => {
    if (!source.synced) return; // whenSynced() schedules one.
    reconciles++;
    try {
      await reconcile(term);
      backoff.reset();
      failing = false;
      lastError = undefined;
      lastSuccessAt = new Date();
      metrics.setLastSuccess(lastSuccessAt.getTime() / 1_000);
    } catch (error) {
      if (error instanceof TermEndedError) return;
      const message = error instanceof Error ? error.message : String(error);
      lastError = message;
      metrics.countError();
      if (error instanceof FencedWriteError) {
        logger.warn({ err: message, term: term.id }, "export write fenced off; leadership lost");
        leadership.relinquish(term, message);
        return;
      }
      const delay = backoff.next();
      if (!failing || backoff.attempts % 10 === 1) {
        logger.warn(
          { err: message, retryInMs: Math.round(delay), attempt: backoff.attempts },
          "export reconcile failed; retrying",
        );
      }
      failing = true;
      if (phase === "running" && leadership.term === term) {
        retryTimer = setTimeout(() => {
          retryTimer = undefined;
          schedule(0);
          notifyIfIdle();
        }, delay);
      }
    }
  };

  /** Returns a version for new content of a service whose stored version is `previous`. */
  const nextVersion = (previous: string | undefined): string => {
    let nanos = clock();
    if (nanos <= lastIssued) nanos = lastIssued + 1n;
    const stored = previous === undefined ? undefined : parseVersion(previous);
    if (stored !== undefined && nanos <= stored) nanos = stored + 1n;
    lastIssued = nanos;
    return formatVersion(nanos);
  };

  /** Logs and counts the rejections and warnings not seen in the previous reconcile. */
  const noteProblems = (newRejections: RouteRejection[], newWarnings: RouteWarning[]): void => {
    const seen = new Set<string>();
    for (const [kind, list] of [
      ["rejection", newRejections],
      ["warning", newWarnings],
    ] as const) {
      for (const problem of list) {
        const id = `${kind}\n${problem.route.kind}/${problem.route.namespace}/${problem.route.name}\n${problem.reason}\n${problem.message}\n${problem.services.join(",")}`;
        seen.add(id);
        if (seenProblems.has(id)) continue;
        const fields = {
          route: problem.route,
          reason: problem.reason,
          message: problem.message,
          services: problem.services,
        };
        if (kind === "rejection") {
          metrics.countRejection(problem.reason);
          logger.warn(fields, "route rejected; it is not exported");
        } else {
          logger.warn(fields, "route exported with a problem");
        }
      }
    }
    seenProblems = seen;
    rejections = newRejections;
    warnings = newWarnings;
  };

  const checkTerm = (term: LeaderTerm): void => {
    if (term.signal.aborted || leadership.term !== term || phase !== "running") {
      throw new TermEndedError("the leadership term ended");
    }
  };

  /** Diffs the desired projections against the stored own-origin ones and writes the difference. */
  const reconcile = async (term: LeaderTerm): Promise<void> => {
    const output = projectServices(source.snapshot());
    noteProblems(output.rejections, output.warnings);
    const listing = await store.list({ origin });
    checkTerm(term);
    const stored = new Map<string, StoredProjection>();
    for (const entry of listing.entries) stored.set(entry.service, entry);
    const writeOptions: WriteOptions = term.fence === undefined ? {} : { fence: term.fence };
    const tasks: (() => Promise<void>)[] = [];
    const desired = new Set<string>();
    for (const projection of output.projections) {
      desired.add(projection.service);
      const current = stored.get(projection.service);
      if (current !== undefined && sameContent(current.projection, projection)) continue;
      tasks.push(async () => {
        checkTerm(term);
        const version = nextVersion(current?.projection.version);
        const revision = await store.put(
          { ...projection, version, originCluster: origin },
          writeOptions,
        );
        writes++;
        metrics.countWrite("put");
        logger.info(
          { service: projection.service, version, revision, routes: projection.routes.length },
          current === undefined ? "exported a new projection" : "exported a changed projection",
        );
      });
    }
    // While the source reports problems (a manifest that does not parse, a
    // failed watch), its snapshot may be missing objects that still exist:
    // hold unexports until it is whole again, so a typo never deletes config.
    const holdDeletes = source.problems().length > 0;
    const held: string[] = [];
    for (const service of stored.keys()) {
      if (desired.has(service)) continue;
      if (holdDeletes) {
        held.push(service);
        continue;
      }
      tasks.push(async () => {
        checkTerm(term);
        const revision = await store.delete(service, writeOptions);
        writes++;
        metrics.countWrite("delete");
        logger.info({ service, revision }, "unexported a projection no longer exported");
      });
    }
    if (held.length > 0) {
      logger.warn(
        { services: held, problems: source.problems().length },
        "holding unexports while the export source reports problems",
      );
    }
    await runLimited(tasks, WRITE_CONCURRENCY);
    checkTerm(term);
    exportedCount = output.projections.length;
    metrics.setServices(exportedCount);
    logger.debug({ writes: tasks.length, services: exportedCount }, "export reconciled");
  };

  const onTerm = (term: LeaderTerm | undefined): void => {
    if (phase !== "running") return;
    metrics.setLeader(term !== undefined);
    cancelScheduled();
    backoff.reset();
    failing = false;
    if (term === undefined) {
      exportedCount = 0;
      metrics.setServices(0);
      logger.info("not the export leader; not exporting");
      notifyIfIdle();
      return;
    }
    logger.info(
      { term: term.id, source: source.name, synced: source.synced },
      "export leader; exporting once the source is synced",
    );
    schedule(0);
  };

  const state = (): ExportState => {
    if (!authority.exports) return "disabled";
    if (phase !== "running") return phase;
    if (leadership.term === undefined) return "standby";
    if (!source.synced) return "waiting-for-source";
    return failing ? "retrying" : "exporting";
  };

  return {
    enabled: authority.exports,
    start() {
      if (phase !== "created") return;
      if (!authority.exports) {
        phase = "stopped";
        logger.warn({ controlCluster: options.controlCluster, origin }, authority.reason);
        return;
      }
      phase = "running";
      unsubscribe.push(leadership.onChange(onTerm));
      unsubscribe.push(source.onChange(() => schedule()));
      source.start();
      source.whenSynced().then(
        () => {
          logger.info({ source: source.name }, "export source synced");
          schedule(0);
        },
        (error: unknown) => {
          if (phase === "running") logger.error({ err: error }, "export source failed to sync");
        },
      );
      leadership.start();
    },
    async stop() {
      if (phase === "stopped") return;
      const wasRunning = phase === "running";
      phase = "stopped";
      for (const off of unsubscribe.splice(0)) off();
      cancelScheduled();
      if (!wasRunning) return;
      await leadership.stop();
      await running;
      metrics.setLeader(false);
      await source.stop();
      notifyIfIdle();
    },
    status() {
      return {
        state: state(),
        disabledReason: authority.exports ? undefined : authority.reason,
        source: source.name,
        leader: authority.exports && phase === "running" && leadership.term !== undefined,
        term: leadership.term?.id,
        services: exportedCount,
        reconciles,
        writes,
        lastSuccessAt,
        lastError,
        rejections,
        warnings,
        sourceProblems: authority.exports ? source.problems() : [],
      };
    },
    idle() {
      if (isIdle()) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
}

/**
 * Runs `tasks` with at most `limit` in flight. On the first failure no new
 * task starts; the ones in flight finish, then it rejects with that failure.
 */
async function runLimited(tasks: readonly (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < tasks.length) {
      const task = tasks[next++] as () => Promise<void>;
      try {
        await task();
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  if (failure !== undefined) throw failure.error;
}
