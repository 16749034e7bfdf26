/**
 * The export controller: the hub's write path. While this registrar holds
 * the export leadership and its object source is synced, it projects the
 * source's snapshot, compares the projections with what the store holds under
 * this registrar's own origin, and reconciles the two: it puts the new and
 * changed projections and deletes the ones no longer exported (including
 * stale ones left by an earlier run).
 *
 * - What the store holds is listed once per leadership term (and again after
 *   any failed or fenced write, or when its watch's revision was
 *   compacted); within a term the controller keeps its own view of its keys
 *   (each service's content digest and version) instead of listing the
 *   store on every change, the way Cilium's kvstore writers skip unchanged
 *   values and resync after a reconnect. Projection is incremental too (see
 *   `projector-incremental.ts`): an edit of one route re-projects the
 *   services it affects, not the whole snapshot.
 * - Self-healing: the view is followed by a watch of the own origin's keys
 *   from the listing's revision, opened once the reconcile that listed has
 *   written (see `own-key-watch.ts`). A change the controller did not make
 *   (a forged value, a delete, a key of a service it does not export)
 *   updates the view and schedules a reconcile, which puts the desired
 *   projection back (or deletes the stray key, unless unexports are held)
 *   and counts and logs each such repair.
 * - Puts are batched into transactions of up to `MAX_WRITE_BATCH`
 *   (one revision each); deletes are written one at a time, so that every
 *   batch a watcher sees is a set of upserts (see `ConfigCache`).
 *
 * - Signing (`signingKey`): every value written is signed after it is
 *   stamped (the stored bytes are what importers verify). A value under the
 *   own keys whose seal is not the key's (unsigned, forged, an old key's;
 *   see `export-seal.ts`) is written again: a foreign one as a repair, and
 *   after `resign()` (a new key) every one, same content and version, so a
 *   key rotates without a gap.
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
 * - Size: every projection is held to the projection limits (bytes, routes,
 *   rules); a route that does not fit is left out as a `too_large` rejection
 *   (see `projection-limiter.ts`). Rejections and warnings are logged through
 *   a rate-limited log, a few lines of each kind a minute and then a count.
 *
 * This module is the shell: leadership terms and their fences, the source,
 * the store, metrics, logs and status. What to write (the diff, content
 * digests, versions, batches, unexports) is the pure plan in
 * `export-plan.ts`; when to reconcile (debounce, one more run, retries) is
 * the coalescing runner in `coalescing-runner.ts`.
 */
import type { ServiceConfigProjection } from "../../../gen/aether/registry/v1/projection_pb.js";
import type { ProjectionLimits } from "../../common/projection-limits.js";
import { formatVersion } from "../../common/projection-version.js";
import type { RouteRejection, RouteWarning } from "../../common/projector.js";
import {
  createIncrementalProjector,
  type IncrementalProjector,
} from "../../common/projector-incremental.js";
import { type Backoff, type BackoffOptions, createBackoff } from "../../runtime/backoff.js";
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import { createRateLimitedLog, type RateLimitedLog } from "../../runtime/rate-limited-log.js";
import type { SigningKey } from "../../signing/signing-key.js";
import type { ObjectSource, SourceProblem } from "../../sources/object-source.js";
import { type ConfigStore, FencedWriteError, type WriteOptions } from "../store/config-store.js";
import { type CoalescingRunner, createCoalescingRunner } from "./coalescing-runner.js";
import { createNoopExportMetrics, type ExportMetrics } from "./export-metrics.js";
import {
  type ChangedProjection,
  changedBatches,
  type ExportedProjection,
  nextVersion,
  planUnexports,
  STORE_BATCH_LIMITS,
} from "./export-plan.js";
import { createSealer, type Sealer, wantedSeal } from "./export-seal.js";
import type { LeaderElection, LeaderTerm } from "./leader-election.js";
import { type RepairKind, repairKindOf } from "./own-key-change.js";
import { listOwnKeys, type OwnKeys } from "./own-key-watch.js";
import { createProjectionLimiter, type ProjectionLimiter } from "./projection-limiter.js";
import { runLimited } from "./run-limited.js";
import type { StatusSink } from "./status-writer.js";

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
  /**
   * The projection limits: routes that would take a projection over them are
   * left out as `too_large` rejections; default `DEFAULT_PROJECTION_LIMITS`.
   */
  readonly limits?: ProjectionLimits;
  /** The key every projection is signed with now; undefined (or absent): written unsigned. */
  readonly signingKey?: () => SigningKey | undefined;
  /**
   * Where the outcome of each successful reconcile goes to be written back
   * as the source objects' status (`status-writer.ts`); paused when the
   * leadership is lost, stopped with the controller. Default none.
   */
  readonly statusSink?: StatusSink;
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
  /**
   * How many of those writes repaired an own key another writer had changed
   * within a term (see `aether_config_export_repairs_total`).
   */
  readonly repairs: number;
  /** When the last reconcile succeeded; undefined before the first. */
  readonly lastSuccessAt: Date | undefined;
  /** Why the last reconcile failed; undefined after a success. */
  readonly lastError: string | undefined;
  /**
   * The routes rejected in the last reconcile: by the projector, or as
   * `too_large` by the projection limits. Complete (GetConfigStatus bounds
   * what it serves of it).
   */
  readonly rejections: readonly RouteRejection[];
  /** The problems in routes projected anyway, from the last reconcile. */
  readonly warnings: readonly RouteWarning[];
  /** The problems the source reports now (unparsable files, failed watches). */
  readonly sourceProblems: readonly SourceProblem[];
  /** The id of the key projections are signed with; undefined: unsigned. */
  readonly signingKeyId: string | undefined;
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
  /**
   * The signing key changed: the store is listed again and every projection
   * whose seal is not the new key's is signed again (same content and
   * version) by the next reconcile, which this asks for.
   */
  resign(): void;
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

/** How many services a reconcile names in its info log line; the rest are counted. */
const LOGGED_SERVICES = 20;

/**
 * One controller's dependencies and mutable state, shared by its factory and
 * the steps of a reconcile below (module functions, so that each stays small).
 */
interface Shell {
  readonly source: ObjectSource;
  readonly store: ConfigStore;
  readonly origin: string;
  readonly leadership: LeaderElection;
  readonly logger: Logger;
  readonly metrics: ExportMetrics;
  readonly clock: () => bigint;
  readonly backoff: Backoff;
  /** The retry delays of reconciles, and of the watch of the own keys. */
  readonly retry: BackoffOptions;
  readonly projector: IncrementalProjector;
  /** Holds the projections to the projection limits. */
  readonly limiter: ProjectionLimiter;
  /** Where per-route problems are logged, a few lines of each kind a minute. */
  readonly problemLog: RateLimitedLog;
  /** The signing key in force; undefined: unsigned. */
  readonly signingKey: () => SigningKey | undefined;
  /** Signs values and says who signed a stored own value (see `export-seal.ts`). */
  readonly sealer: Sealer;
  /** Where each reconcile's outcome goes to be written back as status; undefined: nowhere. */
  readonly statusSink: StatusSink | undefined;
  phase: "created" | "running" | "stopped";
  /** The last version issued (see {@link nextVersion}); 0 before the first. */
  lastIssued: bigint;
  /**
   * The own-origin projections as listed in `ownTerm` and followed since (see
   * {@link OwnKeys}); undefined when the store must be listed again (a new
   * term, a write that failed and may or may not have landed, a failed watch).
   */
  own: OwnKeys | undefined;
  ownTerm: LeaderTerm | undefined;
  /** The services another writer changed, to repair in the next reconcile. */
  toRepair: Set<string>;
  /** Asks the runner for a reconcile (set once the runner exists). */
  request: () => void;
  /** The rejections and warnings of the last reconcile, identified as `noteProblems` does. */
  seenProblems: Set<string>;
  /** The projections exported by the last successful reconcile (see {@link ExportStatus}). */
  services: number;
  reconciles: number;
  writes: number;
  repairs: number;
  lastSuccessAt: Date | undefined;
  lastError: string | undefined;
  /** The last reconcile failed (status `retrying`). */
  failing: boolean;
  rejections: RouteRejection[];
  warnings: RouteWarning[];
}

/**
 * Creates an export controller; nothing runs until `start()`. Throws a
 * TypeError when `origin` is not the store's origin.
 */
export function createExportController(options: ExportControllerOptions): ExportController {
  const { source, store, origin, leadership } = options;
  if (store.origin !== origin) {
    throw new TypeError(`the store writes under origin ${store.origin}, not ${origin}`);
  }
  const shell = newShell(options);
  const { logger, metrics } = shell;
  const authority = exportAuthority(origin, options.controlCluster);
  const runner = createCoalescingRunner({
    run: () => {
      const term = leadership.term;
      return term === undefined ? Promise.resolve(undefined) : runOnce(shell, term);
    },
    active: () => shell.phase === "running" && leadership.term !== undefined,
    debounceMs: options.debounceMs ?? DEFAULT_EXPORT_DEBOUNCE_MS,
    maxDelayMs: options.maxDelayMs ?? 1_000,
  });
  shell.request = () => runner.request();
  const unsubscribe: (() => void)[] = [];

  return {
    enabled: authority.exports,
    start() {
      if (shell.phase !== "created") return;
      if (!authority.exports) {
        shell.phase = "stopped";
        logger.warn({ controlCluster: options.controlCluster, origin }, authority.reason);
        return;
      }
      shell.phase = "running";
      unsubscribe.push(leadership.onChange((term) => followTerm(shell, runner, term)));
      unsubscribe.push(source.onChange(() => runner.request()));
      source.start();
      source.whenSynced().then(
        () => {
          logger.info({ source: source.name }, "export source synced");
          runner.request(0);
        },
        (error: unknown) => {
          if (shell.phase === "running") {
            logger.error({ err: error }, "export source failed to sync");
          }
        },
      );
      leadership.start();
    },
    async stop() {
      if (shell.phase === "stopped") return;
      const wasRunning = shell.phase === "running";
      shell.phase = "stopped";
      for (const off of unsubscribe.splice(0)) off();
      runner.reset(); // not active any more: cancels everything, starts nothing
      dropOwnKeys(shell);
      if (!wasRunning) return;
      await leadership.stop();
      await runner.running;
      metrics.setLeader(false);
      await source.stop();
      await shell.statusSink?.stop();
      shell.problemLog.flush();
    },
    status: () => statusOf(shell, authority),
    idle: () => runner.whenIdle(),
    resign() {
      if (shell.phase !== "running") return;
      dropOwnKeys(shell);
      runner.request(0);
    },
  };
}

/**
 * Follows a change of leadership to `term` (undefined: not the leader): what
 * the old term scheduled is cancelled, and its view and watch (and the
 * repairs it noted) forgotten; a new term reconciles at once (once the
 * source is synced), listing the store first.
 */
function followTerm(shell: Shell, runner: CoalescingRunner, term: LeaderTerm | undefined): void {
  const { logger, metrics, source } = shell;
  if (shell.phase !== "running") return;
  metrics.setLeader(term !== undefined);
  runner.reset();
  shell.backoff.reset();
  shell.failing = false;
  dropOwnKeys(shell);
  shell.toRepair.clear();
  if (term === undefined) {
    shell.statusSink?.pause();
    shell.services = 0;
    metrics.setServices(0);
    logger.info("not the export leader; not exporting");
    return;
  }
  logger.info(
    { term: term.id, source: source.name, synced: source.synced },
    "export leader; exporting once the source is synced",
  );
}

/** The state of a controller with `options`, before `start()`. */
function newShell(options: ExportControllerOptions): Shell {
  const { source, store, origin, leadership } = options;
  const retry: BackoffOptions = {
    initialMs: options.retryInitialMs ?? 100,
    maxMs: options.retryMaxMs ?? 5_000,
    ...(options.random === undefined ? {} : { random: options.random }),
  };
  const signingKey = options.signingKey ?? (() => undefined);
  return {
    source,
    store,
    origin,
    leadership,
    signingKey,
    sealer: createSealer(origin, signingKey),
    statusSink: options.statusSink,
    logger: options.logger ?? createSilentLogger(),
    metrics: options.metrics ?? createNoopExportMetrics(),
    clock: options.clock ?? systemClockNanos,
    backoff: createBackoff(retry),
    retry,
    projector: createIncrementalProjector(),
    limiter: createProjectionLimiter(options.limits),
    problemLog: createRateLimitedLog(options.logger ?? createSilentLogger()),
    phase: "created",
    lastIssued: 0n,
    own: undefined,
    ownTerm: undefined,
    toRepair: new Set(),
    request: () => {},
    seenProblems: new Set(),
    services: 0,
    reconciles: 0,
    writes: 0,
    repairs: 0,
    lastSuccessAt: undefined,
    lastError: undefined,
    failing: false,
    rejections: [],
    warnings: [],
  };
}

/**
 * Runs one reconcile for `term` and handles its outcome. Resolves with the
 * delay before a retry after a failure while `term` is still the current
 * term, else undefined; never rejects.
 */
async function runOnce(shell: Shell, term: LeaderTerm): Promise<number | undefined> {
  const { source, backoff, metrics, logger, leadership } = shell;
  if (!source.synced) return undefined; // whenSynced() asks for one.
  shell.reconciles++;
  try {
    await reconcile(shell, term);
    // Index what the projections depend on now, not when the next edit is waiting.
    setImmediate(() => shell.projector.prepare());
    backoff.reset();
    shell.failing = false;
    shell.lastError = undefined;
    shell.lastSuccessAt = new Date();
    metrics.setLastSuccess(shell.lastSuccessAt.getTime() / 1_000);
    return undefined;
  } catch (error) {
    // A write may have landed or not: list the store again before the next diff.
    dropOwnKeys(shell);
    if (error instanceof TermEndedError) return undefined;
    const message = error instanceof Error ? error.message : String(error);
    shell.lastError = message;
    metrics.countError();
    if (error instanceof FencedWriteError) {
      logger.warn({ err: message, term: term.id }, "export write fenced off; leadership lost");
      leadership.relinquish(term, message);
      return undefined;
    }
    const delay = backoff.next();
    if (!shell.failing || backoff.attempts % 10 === 1) {
      logger.warn(
        { err: message, retryInMs: Math.round(delay), attempt: backoff.attempts },
        "export reconcile failed; retrying",
      );
    }
    shell.failing = true;
    return shell.phase === "running" && leadership.term === term ? delay : undefined;
  }
}

/** Throws a {@link TermEndedError} unless `term` is still the current term of a running controller. */
function checkTerm(shell: Shell, term: LeaderTerm): void {
  if (term.signal.aborted || shell.leadership.term !== term || shell.phase !== "running") {
    throw new TermEndedError("the leadership term ended");
  }
}

/**
 * Lists the own-origin projections into a new view for `term` (followed once
 * the reconcile has written; see {@link reconcile}): a foreign change marks
 * its service for repair and asks for a reconcile; a watch that cannot go on
 * drops the view, listed again by the reconcile it asks for.
 */
async function listView(shell: Shell, term: LeaderTerm): Promise<OwnKeys> {
  dropOwnKeys(shell);
  const own: OwnKeys = await listOwnKeys({
    store: shell.store,
    logger: shell.logger,
    retry: shell.retry,
    sealOf: shell.sealer.sealOf,
    onForeign: (service) => {
      shell.toRepair.add(service);
      shell.request();
    },
    onError: (error) => {
      if (shell.own !== own) return;
      shell.logger.warn({ err: error.message }, "export watch of own keys ended; listing again");
      dropOwnKeys(shell);
      shell.request();
    },
  });
  try {
    checkTerm(shell, term);
  } catch (error) {
    own.cancel();
    throw error;
  }
  shell.own = own;
  shell.ownTerm = term;
  return own;
}

/** Cancels the watch of the own keys and forgets the view: the next reconcile lists again. */
function dropOwnKeys(shell: Shell): void {
  shell.own?.cancel();
  shell.own = undefined;
  shell.ownTerm = undefined;
}

/** What one reconcile wrote (the writes that landed), for its log lines. */
interface Written {
  readonly puts: { readonly service: string; readonly isNew: boolean }[];
  readonly deletes: string[];
  /** The writes that repaired a key another writer had changed. */
  readonly repairs: { readonly service: string; readonly kind: RepairKind }[];
}

/**
 * Diffs the desired projections against the view of the stored own-origin
 * ones and writes the difference, every write with the term's fence. The
 * view is listed first when this term has none; then everything is
 * projected again, otherwise only what the source's changes affect and the
 * services another writer changed (which are repaired).
 */
async function reconcile(shell: Shell, term: LeaderTerm): Promise<void> {
  const { source, projector, logger, metrics } = shell;
  const snapshot = source.snapshot();
  const listed = shell.ownTerm === term ? shell.own : undefined;
  const own = listed ?? (await listView(shell, term));
  const repairing = shell.toRepair;
  shell.toRepair = new Set();
  const done: Written = { puts: [], deletes: [], repairs: [] };
  try {
    const update = projector.update(snapshot, {
      full: listed === undefined,
      services: repairing,
    });
    const { full, warnings } = update;
    const { projections, rejections } = shell.limiter.apply(update);
    noteProblems(shell, rejections, warnings);
    // Handed over to the batches, which let go of each projection as they take it.
    const pending: (ServiceConfigProjection | undefined)[] = [...projections];
    const { writeBatch, unexport } = writers(shell, term, own, repairing, done);
    const problems = source.problems().length;
    const unexports = planUnexports(own.view, projector.services, problems > 0);
    if (unexports.held.length > 0) {
      logger.warn(
        {
          services: unexports.held.slice(0, LOGGED_SERVICES),
          held: unexports.held.length,
          problems,
        },
        "holding unexports while the export source reports problems",
      );
      // A held key another writer put is repaired (and counted) once the hold ends.
      for (const service of unexports.held) if (repairing.has(service)) shell.toRepair.add(service);
    }
    // Tasks are made as the writers ask for them: the content of the next
    // batch is encoded while earlier batches are in flight.
    function* tasks(): Generator<() => Promise<void>> {
      const seal = wantedSeal(shell.signingKey());
      for (const batch of changedBatches(pending, own.view, STORE_BATCH_LIMITS, seal)) {
        yield () => writeBatch(batch);
      }
      for (const service of unexports.unexport) yield () => unexport(service);
    }
    try {
      await runLimited(tasks(), WRITE_CONCURRENCY);
    } finally {
      logWrites(logger, done);
    }
    checkTerm(shell, term);
    // Written: from now on the watch of the own keys (idempotent) finds what others change.
    if (shell.own === own) own.follow();
    shell.statusSink?.update({
      objects: snapshot,
      services: new Set(projector.services),
      rejections,
      warnings,
    });
    shell.services = projector.services.size;
    metrics.setServices(shell.services);
    logger.debug(
      { writes: done.puts.length + done.deletes.length, services: shell.services, full },
      "export reconciled",
    );
  } catch (error) {
    // What was not repaired yet is repaired (and counted) by the next reconcile of the term.
    if (shell.leadership.term === term) {
      const repaired = new Set(done.repairs.map((r) => r.service));
      for (const service of repairing) if (!repaired.has(service)) shell.toRepair.add(service);
    }
    throw error;
  }
}

/**
 * The two writes of a reconcile for `term`: a batch of puts and the delete
 * of one service. Each expects its watch event before it is sent, updates
 * the view as it lands, and records what landed in `done`: a write of a
 * service in `repairing` (the reconcile's own set, to which a service
 * another writer changed since the reconcile began is moved as it is
 * written) as a repair, counted and kept in the status.
 */
function writers(
  shell: Shell,
  term: LeaderTerm,
  own: OwnKeys,
  repairing: Set<string>,
  done: Written,
): {
  writeBatch(batch: readonly ChangedProjection[]): Promise<void>;
  unexport(service: string): Promise<void>;
} {
  const { store, metrics, logger, origin } = shell;
  const writeOptions: WriteOptions = term.fence === undefined ? {} : { fence: term.fence };
  /** Whether a write of `service` repairs it: it was marked before the reconcile began, or since. */
  const isRepair = (service: string): boolean => {
    if (shell.toRepair.delete(service)) repairing.add(service);
    return repairing.has(service);
  };
  const noteRepair = (service: string, kind: RepairKind): void => {
    done.repairs.push({ service, kind });
    shell.repairs++;
    metrics.countRepair(kind);
  };

  const writeBatch = async (batch: readonly ChangedProjection[]): Promise<void> => {
    checkTerm(shell, term);
    const key = shell.signingKey();
    const seal = wantedSeal(key);
    const sign =
      key === undefined ? undefined : (value: Uint8Array) => shell.sealer.sign(value, key);
    const repaired = batch.map(({ projection }) => isRepair(projection.service));
    const stamped = batch.map(({ projection, digest, resealVersion }, i) => {
      // Signed again under its version (a new key), unless it repairs another writer's value.
      const version =
        resealVersion !== undefined && !repaired[i]
          ? resealVersion
          : issueVersion(shell, own.view.get(projection.service));
      const token = own.expect(projection.service, { type: "put", digest, version, seal });
      return { projection: { ...projection, version, originCluster: origin }, token };
    });
    const revision = await store.write(
      stamped.map(({ projection }, i) => ({
        type: "put",
        projection,
        content: (batch[i] as ChangedProjection).content,
        ...(sign === undefined ? {} : { seal: sign }),
      })),
      writeOptions,
    );
    for (const [i, { projection, token }] of stamped.entries()) {
      const { isNew } = batch[i] as ChangedProjection;
      own.landed(projection.service, token);
      done.puts.push({ service: projection.service, isNew });
      if (repaired[i]) noteRepair(projection.service, repairKindOf({ type: "put", isNew }));
      shell.writes++;
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
    checkTerm(shell, term);
    const token = own.expect(service, { type: "delete" });
    const repaired = isRepair(service);
    const revision = await store.delete(service, writeOptions);
    own.landed(service, token, revision !== undefined);
    done.deletes.push(service);
    if (repaired && revision !== undefined) noteRepair(service, repairKindOf({ type: "delete" }));
    shell.writes++;
    metrics.countWrite("delete");
    logger.debug({ service, revision }, "unexported a projection no longer exported");
  };
  return { writeBatch, unexport };
}

/** Issues the next version for new content of a service stored as `previous` (see {@link nextVersion}). */
function issueVersion(shell: Shell, previous: ExportedProjection | undefined): string {
  shell.lastIssued = nextVersion(previous?.version, shell.clock(), shell.lastIssued);
  return formatVersion(shell.lastIssued);
}

/**
 * Counts the rejections and warnings not seen in the previous reconcile, and
 * logs them through the rate-limited log (a few lines of each kind a minute,
 * then a count), so a snapshot of thousands of bad routes logs a handful.
 */
function noteProblems(
  shell: Shell,
  newRejections: RouteRejection[],
  newWarnings: RouteWarning[],
): void {
  const { problemLog, metrics } = shell;
  const seen = new Set<string>();
  for (const [kind, list] of [
    ["rejection", newRejections],
    ["warning", newWarnings],
  ] as const) {
    for (const problem of list) {
      const id = `${kind}\n${problem.route.kind}/${problem.route.namespace}/${problem.route.name}\n${problem.reason}\n${problem.message}\n${problem.services.join(",")}`;
      seen.add(id);
      if (shell.seenProblems.has(id)) continue;
      const fields = {
        route: problem.route,
        reason: problem.reason,
        message: problem.message,
        services: problem.services,
      };
      if (kind === "rejection") {
        metrics.countRejection(problem.reason);
        problemLog.warn("route-rejection", fields, "route rejected; it is not exported");
      } else {
        problemLog.warn("route-warning", fields, "route exported with a problem");
      }
    }
  }
  shell.seenProblems = seen;
  shell.rejections = newRejections;
  shell.warnings = newWarnings;
}

/**
 * Logs one info line for the projections a reconcile wrote (those whose
 * writes landed), naming up to {@link LOGGED_SERVICES} of each kind, and one
 * warning for the keys it repaired; every write is also logged on its own
 * at debug level.
 */
function logWrites(logger: Logger, done: Written): void {
  const { puts, deletes, repairs } = done;
  const name = (services: readonly string[]) => services.slice(0, LOGGED_SERVICES);
  if (repairs.length > 0) {
    const count = (kind: RepairKind) => repairs.filter((r) => r.kind === kind).length;
    logger.warn(
      {
        repairs: repairs.length,
        put: count("put"),
        delete: count("delete"),
        foreignPut: count("foreign_put"),
        services: name(repairs.map((r) => r.service)),
      },
      "repaired own keys another writer had changed",
    );
  }
  if (puts.length === 0 && deletes.length === 0) return;
  const created = puts.filter((w) => w.isNew).map((w) => w.service);
  const changed = puts.filter((w) => !w.isNew).map((w) => w.service);
  logger.info(
    {
      new: created.length,
      changed: changed.length,
      unexported: deletes.length,
      ...(created.length > 0 ? { newServices: name(created) } : {}),
      ...(changed.length > 0 ? { changedServices: name(changed) } : {}),
      ...(deletes.length > 0 ? { unexportedServices: name(deletes) } : {}),
    },
    "exported projections",
  );
}

/** The status of the controller `shell`, which `authority` lets export or not. */
function statusOf(shell: Shell, authority: ReturnType<typeof exportAuthority>): ExportStatus {
  const { phase, leadership, source } = shell;
  const stateNow = (): ExportState => {
    if (!authority.exports) return "disabled";
    if (phase !== "running") return phase;
    if (leadership.term === undefined) return "standby";
    if (!source.synced) return "waiting-for-source";
    return shell.failing ? "retrying" : "exporting";
  };
  return {
    state: stateNow(),
    disabledReason: authority.exports ? undefined : authority.reason,
    source: source.name,
    leader: authority.exports && phase === "running" && leadership.term !== undefined,
    term: leadership.term?.id,
    services: shell.services,
    reconciles: shell.reconciles,
    writes: shell.writes,
    repairs: shell.repairs,
    lastSuccessAt: shell.lastSuccessAt,
    lastError: shell.lastError,
    rejections: shell.rejections,
    warnings: shell.warnings,
    sourceProblems: authority.exports ? source.problems() : [],
    signingKeyId: shell.signingKey()?.keyId,
  };
}
