/**
 * The export controller: the hub's write path. While this registrar holds
 * the export leadership and its object source is synced, it projects the
 * source's snapshot, compares the projections with what the store holds under
 * this registrar's own origin, and reconciles the two: it puts the new and
 * changed projections and deletes the ones no longer exported (including
 * stale ones left by an earlier run).
 *
 * - What the store holds is listed once per leadership term (and again after
 *   any failed or fenced write); within a term the controller is the only
 *   writer of its origin, so it keeps its own view of what it wrote (each
 *   service's content digest and version) instead of listing the store on
 *   every change, the way Cilium's kvstore writers skip unchanged values and
 *   resync after a reconnect. Projection is incremental too (see
 *   `projector-incremental.ts`): an edit of one route re-projects the
 *   services it affects, not the whole snapshot.
 * - Puts are batched into transactions of up to {@link MAX_WRITE_BATCH}
 *   (one revision each); deletes are written one at a time, so that every
 *   batch a watcher sees is a set of upserts (see `ConfigCache`).
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
import { createHash } from "node:crypto";
import type { ServiceConfigProjection } from "../../../gen/aether/registry/v1/projection_pb.js";
import { projectionContent } from "../../common/projection-content.js";
import { formatVersion, parseVersion } from "../../common/projection-version.js";
import type { RouteRejection, RouteWarning } from "../../common/projector.js";
import { createIncrementalProjector } from "../../common/projector-incremental.js";
import { type Backoff, createBackoff } from "../../runtime/backoff.js";
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import type { ObjectSource, SourceProblem } from "../../sources/object-source.js";
import {
  type ConfigStore,
  FencedWriteError,
  MAX_WRITE_BATCH,
  type WriteOptions,
} from "../store/config-store.js";
import { unstampValue } from "../store/decode-entry.js";
import { createNoopExportMetrics, type ExportMetrics } from "./export-metrics.js";
import type { LeaderElection, LeaderTerm } from "./leader-election.js";

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

/** What the controller knows it wrote (or listed) for one service under its origin. */
interface ExportedProjection {
  /** The SHA-256 of the content bytes (see {@link projectionContent}), base64url. */
  readonly digest: string;
  /** The stored version. */
  readonly version: string;
}

/** The digest by which the controller recognises content it exported (see {@link ExportedProjection}). */
function contentDigest(content: Uint8Array): string {
  return createHash("sha256").update(content).digest("base64url");
}

/** The system clock in nanoseconds since the Unix epoch (millisecond resolution). */
export function systemClockNanos(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

/** The leadership term ended during a reconcile: stop writing, without counting an error. */
class TermEndedError extends Error {
  override readonly name = "TermEndedError";
}

/** How many store writes (batches or deletes) one reconcile has in flight at most. */
const WRITE_CONCURRENCY = 4;

/** The most content bytes one write batch carries, well under etcd's 1.5 MiB request limit. */
const MAX_BATCH_BYTES = 512 * 1024;

/** How many services a reconcile names in its info log line; the rest are counted. */
const LOGGED_SERVICES = 20;

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
  const projector = createIncrementalProjector();
  /**
   * The own-origin projections as listed at the start of `viewTerm` and
   * updated by every write since; undefined when the store must be listed
   * again (a new term, or a write that failed and may or may not have landed).
   */
  let view: Map<string, ExportedProjection> | undefined;
  let viewTerm: LeaderTerm | undefined;

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
      // Index what the projections depend on now, not when the next edit is waiting.
      setImmediate(() => projector.prepare());
      backoff.reset();
      failing = false;
      lastError = undefined;
      lastSuccessAt = new Date();
      metrics.setLastSuccess(lastSuccessAt.getTime() / 1_000);
    } catch (error) {
      // A write may have landed or not: list the store again before the next diff.
      view = undefined;
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

  /**
   * Lists the own-origin projections into a new view for `term`: each
   * service's content digest and version. The content is read off the stored
   * bytes without decoding them: they are encoded canonically (by this
   * controller, or a `--seed`), so dropping the origin and version fields
   * gives exactly the content bytes. (Bytes some other encoder wrote with
   * another field order would only look changed, and be written once more.)
   */
  const listView = async (term: LeaderTerm): Promise<Map<string, ExportedProjection>> => {
    const listing = await store.list({ origin });
    checkTerm(term);
    const listed = new Map<string, ExportedProjection>();
    for (const entry of listing.entries) {
      const content = unstampValue(entry.value) ?? projectionContent(entry.projection);
      listed.set(entry.service, { digest: contentDigest(content), version: entry.version });
    }
    return listed;
  };

  /**
   * Diffs the desired projections against the view of the stored own-origin
   * ones and writes the difference. The view is listed first when this term
   * has none; then everything is projected again, otherwise only what the
   * source's changes affect.
   */
  const reconcile = async (term: LeaderTerm): Promise<void> => {
    const snapshot = source.snapshot();
    let current = viewTerm === term ? view : undefined;
    const relisted = current === undefined;
    if (current === undefined) {
      view = undefined;
      current = await listView(term);
      view = current;
      viewTerm = term;
    }
    const exported = current;
    const { full, projections, rejections, warnings } = projector.update(snapshot, {
      full: relisted,
    });
    noteProblems(rejections, warnings);
    // Handed over to the batches, which let go of each projection as they take it.
    const pending: (ServiceConfigProjection | undefined)[] = [...projections];
    const writeOptions: WriteOptions = term.fence === undefined ? {} : { fence: term.fence };
    const written: { service: string; isNew: boolean }[] = [];
    const deleted: string[] = [];

    const writeBatch = async (batch: readonly ChangedProjection[]): Promise<void> => {
      checkTerm(term);
      const stamped = batch.map(({ projection }) => ({
        ...projection,
        version: nextVersion(exported.get(projection.service)?.version),
        originCluster: origin,
      }));
      const revision = await store.write(
        stamped.map((projection, i) => ({
          type: "put",
          projection,
          content: (batch[i] as ChangedProjection).content,
        })),
        writeOptions,
      );
      for (const [i, projection] of stamped.entries()) {
        const { digest, isNew } = batch[i] as ChangedProjection;
        exported.set(projection.service, { digest, version: projection.version });
        written.push({ service: projection.service, isNew });
        writes++;
        metrics.countWrite("put");
        logger.debug(
          {
            service: projection.service,
            version: projection.version,
            revision,
            routes: projection.routes.length,
          },
          isNew ? "exported a new projection" : "exported a changed projection",
        );
      }
    };

    const unexport = async (service: string): Promise<void> => {
      checkTerm(term);
      const revision = await store.delete(service, writeOptions);
      exported.delete(service);
      deleted.push(service);
      writes++;
      metrics.countWrite("delete");
      logger.debug({ service, revision }, "unexported a projection no longer exported");
    };

    // While the source reports problems (a manifest that does not parse, a
    // failed watch), its snapshot may be missing objects that still exist:
    // hold unexports until it is whole again, so a typo never deletes config.
    const holdDeletes = source.problems().length > 0;
    const gone = [...exported.keys()].filter((service) => !projector.services.has(service));
    if (holdDeletes && gone.length > 0) {
      logger.warn(
        { services: gone, problems: source.problems().length },
        "holding unexports while the export source reports problems",
      );
    }
    // Tasks are made as the writers ask for them: the content of the next
    // batch is encoded while earlier batches are in flight.
    function* tasks(): Generator<() => Promise<void>> {
      for (const batch of changedBatches(pending, exported)) {
        yield () => writeBatch(batch);
      }
      if (!holdDeletes) for (const service of gone) yield () => unexport(service);
    }
    try {
      await runLimited(tasks(), WRITE_CONCURRENCY);
    } finally {
      logWrites(written, deleted);
    }
    checkTerm(term);
    exportedCount = projector.services.size;
    metrics.setServices(exportedCount);
    logger.debug(
      { writes: written.length + deleted.length, services: exportedCount, full },
      "export reconciled",
    );
  };

  /**
   * Logs one info line for the projections a reconcile wrote (those whose
   * writes landed), naming up to {@link LOGGED_SERVICES} of each kind; every write is
   * also logged on its own at debug level.
   */
  const logWrites = (
    written: readonly { service: string; isNew: boolean }[],
    deleted: readonly string[],
  ): void => {
    if (written.length === 0 && deleted.length === 0) return;
    const created = written.filter((w) => w.isNew).map((w) => w.service);
    const changed = written.filter((w) => !w.isNew).map((w) => w.service);
    const name = (services: readonly string[]) => services.slice(0, LOGGED_SERVICES);
    logger.info(
      {
        new: created.length,
        changed: changed.length,
        unexported: deleted.length,
        ...(created.length > 0 ? { newServices: name(created) } : {}),
        ...(changed.length > 0 ? { changedServices: name(changed) } : {}),
        ...(deleted.length > 0 ? { unexportedServices: name(deleted) } : {}),
      },
      "exported projections",
    );
  };

  const onTerm = (term: LeaderTerm | undefined): void => {
    if (phase !== "running") return;
    metrics.setLeader(term !== undefined);
    cancelScheduled();
    backoff.reset();
    failing = false;
    view = undefined;
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

/** A projection whose content differs from what the store holds. */
interface ChangedProjection {
  /** The projection, without version and origin. */
  readonly projection: ServiceConfigProjection;
  /** Its content bytes (see {@link projectionContent}). */
  readonly content: Uint8Array;
  /** Their digest (see {@link contentDigest}). */
  readonly digest: string;
  /** Whether the store holds no projection of the service yet. */
  readonly isNew: boolean;
}

/**
 * Yields the projections whose content differs from `exported` in write
 * batches of at most {@link MAX_WRITE_BATCH} projections and about
 * {@link MAX_BATCH_BYTES} content bytes (a larger projection goes alone),
 * encoding each projection's content only when the batch is asked for. Each
 * projection is removed from `projections` as it is taken, so that a large
 * export holds only the projections not written yet.
 */
function* changedBatches(
  projections: (ServiceConfigProjection | undefined)[],
  exported: ReadonlyMap<string, ExportedProjection>,
): Generator<ChangedProjection[]> {
  let batch: ChangedProjection[] = [];
  let bytes = 0;
  for (let i = 0; i < projections.length; i++) {
    const projection = projections[i];
    projections[i] = undefined;
    if (projection === undefined) continue;
    const known = exported.get(projection.service);
    const content = projectionContent(projection);
    const digest = contentDigest(content);
    if (known?.digest === digest) continue;
    const size = content.length + 128;
    if (batch.length > 0 && (batch.length === MAX_WRITE_BATCH || bytes + size > MAX_BATCH_BYTES)) {
      yield batch;
      batch = [];
      bytes = 0;
    }
    batch.push({ projection, content, digest, isNew: known === undefined });
    bytes += size;
  }
  if (batch.length > 0) yield batch;
}

/**
 * Runs `tasks` with at most `limit` in flight, taking each task from the
 * iterable only when a runner is free. On the first failure no new task
 * starts; the ones in flight finish, then it rejects with that failure.
 */
async function runLimited(tasks: Iterable<() => Promise<void>>, limit: number): Promise<void> {
  const iterator = tasks[Symbol.iterator]();
  let failure: { error: unknown } | undefined;
  const runner = async (): Promise<void> => {
    while (failure === undefined) {
      try {
        const next = iterator.next();
        if (next.done === true) return;
        await next.value();
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: limit }, runner));
  if (failure !== undefined) throw failure.error;
}
