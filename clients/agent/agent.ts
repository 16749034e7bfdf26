/**
 * The agent as a library: one per node, it turns the projections its
 * workloads need (the dependency set) into the route table its data plane
 * applies. It wires the dependency set (options, a followed file, or
 * {@link Agent.setDependencies}), the config follower (stream first, polling
 * as fallback, the shared import policy), the last-known cache, the local
 * routes, the merge, and the outputs: a file, `GET /routes` and
 * `/healthz`, `/readyz`, `/metrics` on a local port, and in-process
 * listeners ({@link Agent.onUpdate}) or an async iterator
 * ({@link Agent.updates}). `main.ts` is only flags and signals around this.
 *
 * Availability over freshness: the cache is served before the registrar
 * answers; registrar or store outages, partitions, garbage on the wire and
 * restarts during any of these never shrink the table. Only a complete new
 * state (a SYNCED snapshot, a streamed change, a complete listing) changes
 * it, and only within the dependency set.
 *
 * This file only wires: it builds the parts, connects their callbacks, and
 * orders start and stop. The decisions are elsewhere: the merge, change
 * detection and readiness in `route-table-feed.ts`, the cache's restore and
 * save in `cached-state.ts`, the listeners and iterators in
 * `table-broadcast.ts`, following the registrar in `config-follower.ts`.
 */

import { readFile } from "node:fs/promises";
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import {
  DEFAULT_MASS_DELETE_THRESHOLD,
  type MassDeleteThreshold,
} from "../../services/common/import-loss.js";
import {
  createImportPolicy,
  type ImportCandidate,
  type ImportPolicy,
} from "../../services/common/import-policy.js";
import type { RouteTable } from "../../services/common/route-merge.js";
import type { ClientTlsConfig } from "../../services/process/client-tls-flags.js";
import { createSilentLogger, type Logger } from "../../services/runtime/logger.js";
import type { ObjectSource } from "../../services/sources/object-source.js";
import {
  type AgentHttpAddress,
  type AgentHttpServer,
  type AgentListenTarget,
  createAgentHttpServer,
} from "./agent-http.js";
import {
  type AgentMetrics,
  createAgentMetrics,
  type FollowMode,
  versionAgeSeconds,
} from "./agent-metrics.js";
import { createAgentSignatures } from "./agent-signatures.js";
import { type AgentTls, createAgentTls } from "./agent-tls.js";
import { createLatestWriter } from "./atomic-file.js";
import { type CachedStateStore, createCachedStateStore } from "./cached-state.js";
import { createDependencyFile, type DependencyFile } from "./dependency-file.js";
import { createDependencySet, followedRecords } from "./dependency-set.js";
import {
  type ConfigFollower,
  createConfigFollower,
  createReconnectBackoff,
  DEFAULT_MASS_DELETE_HOLD_MS,
  type FollowerClient,
  type FollowerState,
  type FollowerUpdate,
  type HeldCandidate,
  type LossReport,
} from "./follower/config-follower.js";
import type { ReceivedRejection } from "./follower/received-projection.js";
import { createLastKnownCache } from "./last-known-cache.js";
import { createLocalRoutes, type LocalRoutes } from "./local-routes.js";
import { createRegistrarConnection, type RegistrarConnection } from "./registrar-connection.js";
import {
  type AgentReporter,
  type AgentReportState,
  createAgentReporter,
} from "./report/agent-reporter.js";
import type { ReporterClient } from "./report/status-reporter.js";
import { createTablePublisher, type TablePublisher } from "./table-publisher.js";
import { createUnresolvedRefLog } from "./unresolved-refs.js";

/** Options of {@link createAgent}. */
export interface AgentOptions {
  /** The registrar's base URL (ignored when `client` is given). */
  readonly registrar: string;
  /** This agent's cluster; local routes are recorded with it as their origin. */
  readonly cluster: string;
  /** The control cluster; undefined or empty means federated. */
  readonly controlCluster?: string | undefined;
  /** The dependency set (besides the file's); see also {@link Agent.setDependencies}. */
  readonly dependencies?: Iterable<string>;
  /** A dependency file to follow (`--deps-file`). */
  readonly dependenciesFile?: string | undefined;
  /** The last-known cache directory; undefined keeps no cache. */
  readonly cacheDir?: string | undefined;
  /** The source of local (class-2) route objects; the agent starts and stops it. */
  readonly localSource?: ObjectSource | undefined;
  /** A file the route table is written to (atomically, only when it changed). */
  readonly outFile?: string | undefined;
  /**
   * Where to serve `/healthz`, `/readyz`, `/metrics` (and `/routes`, unless
   * `routesListen` is given); undefined serves nothing.
   */
  readonly listen?: { readonly host: string; readonly port: number } | undefined;
  /**
   * Where to serve `/routes` alone, for the node's data plane: a Unix socket
   * (`{path}`) or a host-local address; undefined serves it on `listen`.
   */
  readonly routesListen?: AgentListenTarget | undefined;
  /** `watch` (default) or `poll`. */
  readonly mode?: FollowMode;
  /** The polling period, in milliseconds; default 10000. */
  readonly pollIntervalMs?: number;
  /**
   * How far ahead of `now` an imported version may be before it is rejected
   * as `version_out_of_range`, in milliseconds; default 5 minutes.
   */
  readonly maxVersionSkewMs?: number;
  /** How long a stream may stay silent before it counts as dead, in milliseconds; default 45000. */
  readonly keepaliveTimeoutMs?: number;
  /** The first reconnect delay (before jitter), in milliseconds; default 200. */
  readonly backoffInitialMs?: number;
  /** The cap on the reconnect delay (before jitter), in milliseconds; default 5000. */
  readonly backoffMaxMs?: number;
  /** Logger; silent by default. */
  readonly logger?: Logger;
  /** Whether `/metrics` includes Node's process metrics; default false (true in `main.ts`). */
  readonly processMetrics?: boolean;
  /**
   * TLS to an https:// registrar (the flags' files; the agent follows their
   * rotation). A trust failure makes `/readyz` not ready and is counted.
   */
  readonly tls?: ClientTlsConfig | undefined;
  /** A ConfigService client to use instead of connecting to `registrar` (tests, embedding). */
  readonly client?: FollowerClient;
  /** The clock, in milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
  /**
   * When imported projections missing from a complete state are held
   * instead of dropped (`--mass-delete-threshold`, `--mass-delete-min`);
   * default more than 50% and at least 3.
   */
  readonly massDelete?: MassDeleteThreshold;
  /** How long such a hold lasts (`--mass-delete-hold`), in milliseconds; default 10 minutes. */
  readonly massDeleteHoldMs?: number;
  /**
   * The origins' public keys (`--origin-keys`), followed: every imported
   * projection's signature is verified with them (see `agent-signatures.ts`);
   * a bad file makes `start()` reject. Undefined: signatures are not checked.
   */
  readonly originKeysFile?: string | undefined;
  /** `--require-signatures`: refuse unsigned projections and unknown keys (needs `originKeysFile`). */
  readonly requireSignatures?: boolean;
  /**
   * The agent's name when it reports what it applied to the registrar
   * (`ReportAppliedConfig`, see `report/`); default the node name
   * (`NODE_NAME`), else the host name. An invalid name makes `createAgent` throw.
   */
  readonly agentId?: string | undefined;
  /** The reports' incarnation (tests); default a random UUID per agent. */
  readonly incarnation?: string | undefined;
}

/** A running agent. */
export interface Agent {
  /** The current route table; undefined until the agent is ready. */
  readonly table: RouteTable | undefined;
  /** True once a cache or a first complete state was loaded (it stays true). */
  readonly ready: boolean;
  /** The dependency set, sorted. */
  readonly dependencies: readonly string[];
  /** `watch` while streaming, `poll` while polling. */
  readonly mode: FollowMode;
  /** The metrics (and their registry). */
  readonly metrics: AgentMetrics;
  /** The HTTP endpoint's address once started with `listen`. */
  readonly address: AgentHttpAddress | undefined;
  /** Where `/routes` is served once started: `routesListen`'s address, or `address`. */
  readonly routesAddress: AgentHttpAddress | undefined;
  /**
   * Loads the cache (and serves it at once), reads the dependency file,
   * starts the local source and the follower, and binds the HTTP endpoint.
   * Resolves without waiting for the registrar.
   */
  start(): Promise<void>;
  /** Stops everything and flushes the cache and the output file. Idempotent. */
  stop(): Promise<void>;
  /**
   * Replaces the dependency set given in the options (the file's entries are
   * added to it). Throws a TypeError naming the first entry that is not
   * `namespace/name`.
   */
  setDependencies(services: Iterable<string>): void;
  /**
   * Registers a listener called with every new route table (only when it
   * changed); returns a function that unregisters it. A listener that throws
   * is logged and does not stop the others.
   */
  onUpdate(listener: (table: RouteTable) => void): () => void;
  /**
   * Iterates over route tables: the current one first (when ready), then
   * every new one. A slow consumer skips to the latest table. Ends when the
   * agent stops or `signal` aborts.
   */
  updates(options?: { signal?: AbortSignal }): AsyncGenerator<RouteTable, void, undefined>;
  /** Resolves once the agent is ready (see {@link Agent.ready}). */
  whenReady(): Promise<void>;
}

/** The `--out` file: written (atomically) only when its content changes. */
interface RouteFile {
  /** Reads what the file holds, so that a restart does not rewrite an identical file. */
  load(): Promise<void>;
  /** Schedules `json` to be written unless the file holds it already. */
  write(json: string): void;
  /** Resolves once every scheduled write has finished. */
  flush(): Promise<void>;
}

/** The agent's parts, built from its options; none of them runs yet. */
interface AgentParts {
  readonly connection: RegistrarConnection | undefined;
  readonly client: FollowerClient;
  readonly cache: CachedStateStore | undefined;
  readonly out: RouteFile | undefined;
  readonly depsFile: DependencyFile | undefined;
  readonly localRoutes: LocalRoutes | undefined;
}

/** Builds the parts the options ask for, reporting their problems to the metrics and the log. */
function createParts(
  options: AgentOptions,
  context: {
    metrics: AgentMetrics;
    logger: Logger;
    policy: ImportPolicy;
    keepaliveTimeoutMs: number;
    tls: AgentTls;
    /** A cached projection dropped on load. */
    refused: (rejection: ReceivedRejection) => void;
  },
): AgentParts {
  const { metrics, logger } = context;
  const connection =
    options.client === undefined
      ? createRegistrarConnection({
          ...context.tls.connection,
          baseUrl: options.registrar,
          pingIntervalMs: Math.max(1_000, Math.floor(context.keepaliveTimeoutMs / 2)),
          onMessageBytes: (method, bytes) => metrics.countReceivedBytes(method, bytes),
        })
      : undefined;
  const cache =
    options.cacheDir === undefined
      ? undefined
      : createCachedStateStore({
          cache: createLastKnownCache({
            dir: options.cacheDir,
            onError: (error) => {
              metrics.countCacheError(error.reason);
              logger.warn({ reason: error.reason, err: error.message }, "last-known cache problem");
            },
          }),
          policy: context.policy,
          logger,
          onDropped: context.refused,
        });
  return {
    connection,
    client: options.client ?? (connection as RegistrarConnection).client,
    cache,
    out: options.outFile === undefined ? undefined : createRouteFile(options.outFile, context),
    depsFile:
      options.dependenciesFile === undefined
        ? undefined
        : createDependencyFile({ path: options.dependenciesFile, logger }),
    localRoutes:
      options.localSource === undefined
        ? undefined
        : createLocalRoutes({ source: options.localSource, logger }),
  };
}

function createRouteFile(
  path: string,
  context: { metrics: AgentMetrics; logger: Logger },
): RouteFile {
  const { metrics, logger } = context;
  /** What the file holds (or is being written with). */
  let written: string | undefined;
  const writer = createLatestWriter(path, {
    onError: (error) => {
      metrics.countOutputWrite("error");
      logger.error({ err: error.message, file: path }, "cannot write the route table");
    },
    onWritten: () => metrics.countOutputWrite("ok"),
  });
  return {
    async load() {
      written = await readFile(path, "utf8").catch(() => undefined);
    },
    write(json) {
      if (json === written) return;
      written = json;
      writer.write(json);
    },
    flush: () => writer.flush(),
  };
}

/** Creates the follower for the agent's options, its callbacks wired to the metrics. */
function createFollower(
  options: AgentOptions,
  wiring: {
    client: FollowerClient;
    policy: ImportPolicy;
    services: readonly string[];
    initial: FollowerState | undefined;
    keepaliveTimeoutMs: number;
    metrics: AgentMetrics;
    logger: Logger;
    connection: RegistrarConnection | undefined;
    onUpdate(update: FollowerUpdate): void;
    refused(rejection: ReceivedRejection): void;
    /** Called with each change event (UPSERT, DELETE) the stream delivers, as it arrives. */
    received(): void;
    /** Called when a stream reaches SYNCED (a registrar, maybe another or restarted, serves it). */
    synced(): void;
  },
): ConfigFollower {
  const { metrics, logger, keepaliveTimeoutMs } = wiring;
  return createConfigFollower({
    client: wiring.client,
    policy: wiring.policy,
    services: wiring.services,
    mode: options.mode ?? "watch",
    pollIntervalMs: options.pollIntervalMs,
    keepaliveTimeoutMs,
    requestTimeoutMs: Math.min(10_000, keepaliveTimeoutMs),
    backoff: createReconnectBackoff({
      initialMs: options.backoffInitialMs,
      maxMs: options.backoffMaxMs,
    }),
    initial: wiring.initial,
    logger,
    guard: {
      threshold: options.massDelete ?? DEFAULT_MASS_DELETE_THRESHOLD,
      holdMs: options.massDeleteHoldMs ?? DEFAULT_MASS_DELETE_HOLD_MS,
    },
    ...(options.now === undefined ? {} : { now: options.now }),
    observer: {
      onUpdate: wiring.onUpdate,
      onLoss: (report) => countLoss(report, metrics),
      onRejection: wiring.refused,
      onStreamEvent: (type) => {
        metrics.countStreamEvent(type);
        if (type === "upsert" || type === "delete") wiring.received();
        else if (type === "synced") wiring.synced();
      },
      onReconnect: () => metrics.countReconnect(),
      onModeChange: (mode) => logger.info({ mode }, "follow mode changed"),
      onError: (operation) => metrics.countImportError(operation),
      onPoll: (result) => metrics.countPoll(result),
      onDeadConnection: () => wiring.connection?.drop("the stream went silent"),
      onRegistrarStore: (unavailable) => {
        if (unavailable) {
          logger.warn(
            {},
            "the registrar cannot reach its store: it serves the view it last synced, and changes arrive once its store is back",
          );
        } else logger.info({}, "the registrar's stream no longer says its store is unavailable");
      },
    },
  });
}

/**
 * Observes the propagation lag (export stamp to now) of each fresh
 * candidate of an update, unless it is the first state (whose candidates
 * were not propagated just now).
 */
function observePropagationLag(
  update: FollowerUpdate,
  metrics: AgentMetrics,
  now: () => number,
): void {
  if (update.first) return;
  for (const candidate of update.fresh) {
    const age = versionAgeSeconds(candidate.projection.version, now());
    if (age !== undefined) metrics.observePropagationLag(age);
  }
}

/** Counts a loss report's applied deletes, by origin. */
function countLoss(report: LossReport, metrics: AgentMetrics): void {
  const byOrigin = (origins: readonly string[]) => {
    const counts = new Map<string, number>();
    for (const origin of origins) counts.set(origin, (counts.get(origin) ?? 0) + 1);
    return counts;
  };
  for (const [origin, count] of byOrigin(report.deleted.map((c) => c.origin))) {
    metrics.countDeletes(origin, count);
  }
}

/** The held candidates, counted by origin (the held-deletes gauge). */
function heldByOrigin(held: ReadonlyMap<string, HeldCandidate> | undefined): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { candidate } of held?.values() ?? []) {
    counts.set(candidate.origin, (counts.get(candidate.origin) ?? 0) + 1);
  }
  return counts;
}

/**
 * The degraded reason `/readyz` reports while candidates are held (undefined
 * when none are): how many, since when, why, and when they are dropped.
 */
export function describeHeldCandidates(
  held: ReadonlyMap<string, HeldCandidate> | undefined,
  holdMs: number,
): string | undefined {
  if (held === undefined || held.size === 0) return undefined;
  const holds = [...held.values()];
  const since = Math.min(...holds.map((h) => h.since));
  return `${held.size} imported projections held since ${new Date(since).toISOString()} (${holds[0]?.reason}); still in the route table until the registrar has them again or, ${Math.round(holdMs / 1000)}s after the hold started, still lacks them`;
}

/**
 * Serves `/healthz`, `/readyz` and `/metrics` on `listen`, and `/routes`
 * there too, or alone on `routesListen` when given.
 */
async function serveHttp(
  listen: AgentListenTarget | undefined,
  routesListen: AgentListenTarget | undefined,
  context: {
    publisher: TablePublisher;
    metrics: AgentMetrics;
    logger: Logger;
    degraded: () => string | undefined;
    notReady: () => string | undefined;
  },
): Promise<{ servers: AgentHttpServer[]; address?: AgentHttpAddress; routes?: AgentHttpAddress }> {
  const servers: AgentHttpServer[] = [];
  let address: AgentHttpAddress | undefined;
  let routes: AgentHttpAddress | undefined;
  if (listen !== undefined) {
    const server = endpoint(routesListen === undefined ? "all" : "admin", context);
    servers.push(server);
    address = await server.listen(listen);
    if (routesListen === undefined) routes = address;
  }
  if (routesListen !== undefined) {
    const server = endpoint("routes", context);
    servers.push(server);
    routes = await server.listen(routesListen);
  }
  return {
    servers,
    ...(address === undefined ? {} : { address }),
    ...(routes === undefined ? {} : { routes }),
  };
}

/** One of the agent's HTTP endpoints (see `agent-http.ts`). */
function endpoint(
  serves: "all" | "routes" | "admin",
  context: {
    publisher: TablePublisher;
    metrics: AgentMetrics;
    logger: Logger;
    degraded: () => string | undefined;
    notReady: () => string | undefined;
  },
): AgentHttpServer {
  const { publisher } = context;
  return createAgentHttpServer({
    serves,
    routes: () => publisher.json(),
    readiness: () => {
      const notReady = context.notReady();
      if (notReady !== undefined) return { ready: false, reason: notReady };
      if (!publisher.ready) {
        return { ready: false, reason: "no cache and no complete state from the registrar yet" };
      }
      const degraded = context.degraded();
      return degraded === undefined ? { ready: true } : { ready: true, degraded };
    },
    metricsRegistry: context.metrics.registry,
    logger: context.logger,
  });
}

/**
 * The status reporter (see `report/`) over the registrar's client, or
 * undefined when that client cannot report (one given in the options
 * without `reportAppliedConfig`). Throws a TypeError for an invalid `agentId`.
 */
function createReporter(
  options: AgentOptions,
  client: FollowerClient,
  state: AgentReportState,
  context: { metrics: AgentMetrics; logger: Logger; now: () => number },
): AgentReporter | undefined {
  const reporterClient = client as FollowerClient & Partial<ReporterClient>;
  if (typeof reporterClient.reportAppliedConfig !== "function") return undefined;
  return createAgentReporter({
    client: reporterClient as ReporterClient,
    agentId: options.agentId,
    incarnation: options.incarnation,
    state,
    now: context.now,
    onResult: (result) => context.metrics.countStatusReport(result),
    logger: context.logger.child({ part: "status-report" }),
  });
}

/**
 * Creates an agent; nothing runs until `start()`. It holds what the parts
 * share (the dependency set, the imported winners, the cached local routes)
 * and wires them; see the module comment.
 *
 * Why it is long: it is only that wiring, flat (about 195 lines): the
 * closures share the agent's state, and splitting them further would pass
 * that state around instead.
 */
export function createAgent(options: AgentOptions): Agent {
  const logger = options.logger ?? createSilentLogger();
  const now = options.now ?? Date.now;
  const signatures = createAgentSignatures({
    originKeysFile: options.originKeysFile,
    require: options.requireSignatures ?? false,
    logger,
    metrics: { countOriginKeysReload: (result) => metrics.countOriginKeysReload(result) },
    onKeysAdded: (added) => follower?.resync(`origin keys added: ${added.join(", ")}`),
  });
  const policy = createImportPolicy({
    signatures: signatures.check,
    controlCluster: options.controlCluster,
    ...(options.maxVersionSkewMs === undefined ? {} : { maxFutureMs: options.maxVersionSkewMs }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  const keepaliveTimeoutMs = options.keepaliveTimeoutMs ?? 45_000;
  const deps = createDependencySet(options.dependencies ?? [], () => depsFile?.services ?? []);
  let cacheLoaded = false;
  let cachedLocal: ReadonlyMap<string, ServiceConfigProjection> = new Map();
  let imported = new Map<string, ImportCandidate>();
  let address: AgentHttpAddress | undefined;
  let started = false;
  let stopping: Promise<void> | undefined;
  /** Created by start(), after the cache is loaded (its state is the follower's initial one). */
  let follower: ConfigFollower | undefined;
  let servers: AgentHttpServer[] = [];
  let routesAddress: AgentHttpAddress | undefined;

  const metrics: AgentMetrics = createAgentMetrics({
    processMetrics: options.processMetrics ?? false,
    view: {
      table: () => publisher.table,
      importedServices: () => deps.services.filter((s) => imported.has(s)).length,
      dependencies: () => deps.services.length,
      dependencyProblems: () => depsFile?.problems.length ?? 0,
      localRejections: () => localRoutes?.rejections.length ?? 0,
      revision: () => follower?.state?.revision ?? 0n,
      ready: () => publisher.ready,
      mode: () => follower?.mode ?? options.mode ?? "watch",
      registrarStoreUnavailable: () => follower?.registrarStoreUnavailable ?? false,
      heldDeletes: () => heldByOrigin(follower?.held),
      originKeys: () => signatures.keys,
      now,
    },
  });
  const tls = createAgentTls(options.tls, {
    now,
    metrics,
    logger,
    dropConnection: (reason) => parts.connection?.drop(reason),
  });
  /** A refused projection: counted, and reported to the registrar. */
  const refused = (rejection: ReceivedRejection) => {
    metrics.countRejection(rejection.reason);
    reporter?.refused(rejection);
  };
  const context = { metrics, logger, policy, keepaliveTimeoutMs, tls, refused };
  const parts = createParts(options, context);
  const { connection, cache, out, depsFile, localRoutes } = parts;
  const localProjections = (): ReadonlyMap<string, ServiceConfigProjection> =>
    localRoutes?.synced === true ? localRoutes.projections : cachedLocal;
  const publisher = createTablePublisher({
    logger,
    readiness: () => ({
      cacheLoaded,
      imported: follower?.state !== undefined,
      dependencies: deps.services.length,
      local:
        localRoutes === undefined
          ? undefined
          : { synced: localRoutes.synced, failed: localRoutes.failure !== undefined },
    }),
    inputs: () => ({
      dependencies: deps.services,
      local: localProjections(),
      imported,
      cluster: options.cluster,
      filters: localRoutes?.synced === true ? localRoutes.filters : undefined,
    }),
    write: out === undefined ? undefined : (json) => out.write(json),
    closed: () => stopping !== undefined,
  });
  publisher.onUpdate(createUnresolvedRefLog(logger));
  const reporter = createReporter(
    options,
    parts.client,
    {
      followed: () => followedRecords(deps.services),
      imported: () => imported,
      table: () => publisher.table,
      ready: () => publisher.ready,
      revision: () => follower?.state?.revision ?? 0n,
    },
    { metrics, logger, now },
  );
  publisher.onUpdate(() => reporter?.changed());

  /** Persists the accepted state (the store skips what it saved last). */
  const saveCache = () => {
    const state = follower?.state;
    if (state !== undefined) cache?.save(state, localProjections());
  };

  /** When the first change event not yet in a published table arrived (performance.now()). */
  let receivedAt: number | undefined;
  const onFollowerUpdate = (update: FollowerUpdate) => {
    // Admitted on arrival by the follower's candidate set: ranked, not judged again
    // (a key removed from --origin-keys revokes nothing held).
    imported = policy.winners(update.state.candidates.values());
    observePropagationLag(update, metrics, now);
    saveCache();
    publisher.publish();
    if (receivedAt !== undefined && !update.first) {
      metrics.observeApplyDelay((performance.now() - receivedAt) / 1000);
    }
    receivedAt = undefined;
    reporter?.changed();
  };

  const onDependenciesChanged = () => {
    if (!deps.refresh()) return;
    follower?.setServices(followedRecords(deps.services));
    publisher.publish();
    reporter?.changed();
  };

  /** The start order: cache, dependencies, follower, local routes, then the HTTP endpoint. */
  const startParts = async () => {
    signatures.open();
    await tls.open();
    await out?.load();
    const restored = await cache?.load();
    if (restored !== undefined) {
      cachedLocal = restored.local;
      cacheLoaded = true;
      imported = policy.resolve(restored.state.candidates.values()).winners;
    }
    if (depsFile !== undefined) {
      await depsFile.start();
      depsFile.onChange(onDependenciesChanged);
    }
    deps.refresh();
    if (deps.services.length === 0) {
      logger.warn("the dependency set is empty: nothing is watched until it is not");
    }
    const created = createFollower(options, {
      client: parts.client,
      connection,
      policy,
      services: followedRecords(deps.services),
      initial: restored?.state,
      keepaliveTimeoutMs,
      metrics,
      logger,
      onUpdate: onFollowerUpdate,
      refused,
      received: () => {
        receivedAt ??= performance.now();
      },
      synced: () => reporter?.connected(),
    });
    follower = created;
    if (restored !== undefined && signatures.check !== undefined) {
      // The keys may have changed while the agent was down: what it refused
      // then is past the cached revision, and a resumed stream would not send it.
      created.resync("verifying signatures after a restart");
    }
    publisher.publish();
    if (localRoutes !== undefined) {
      localRoutes.onChange(() => {
        saveCache();
        publisher.publish();
      });
      void localRoutes.start().then(() => publisher.publish());
    }
    created.start();
    reporter?.start();
    const holdMs = options.massDeleteHoldMs ?? DEFAULT_MASS_DELETE_HOLD_MS;
    const degraded = () => describeHeldCandidates(follower?.held, holdMs);
    const served = await serveHttp(options.listen, options.routesListen, {
      publisher,
      metrics,
      logger,
      degraded,
      notReady: () => tls.trust.notReadyReason(),
    });
    ({ servers, address, routes: routesAddress } = served);
    const { registrar, controlCluster, mode } = options;
    const fields = { url: address?.url, registrar, controlCluster: controlCluster ?? null };
    logger.info(
      { ...fields, dependencies: deps.services.length, mode: mode ?? "watch" },
      "agent serving",
    );
  };

  return {
    get table() {
      return publisher.table;
    },
    get ready() {
      return publisher.ready;
    },
    get dependencies() {
      return deps.services;
    },
    get mode() {
      return follower?.mode ?? options.mode ?? "watch";
    },
    metrics,
    get address() {
      return address;
    },
    get routesAddress() {
      return routesAddress;
    },
    async start() {
      if (started) return;
      started = true;
      await startParts();
    },
    stop() {
      // The follower first (no new state), the HTTP endpoint and the connection
      // next; then the pending writes are flushed and the iterators end.
      stopping ??= (async () => {
        await follower?.stop();
        await reporter?.stop();
        depsFile?.stop();
        signatures.close();
        await localRoutes?.stop();
        await Promise.all(servers.map((server) => server.close()));
        connection?.close();
        tls.close();
        await cache?.flush();
        await out?.flush();
        publisher.close();
        logger.info("agent stopped");
      })();
      return stopping;
    },
    setDependencies(services) {
      deps.setGiven(services);
      if (started) onDependenciesChanged();
      else deps.refresh();
    },
    onUpdate: publisher.onUpdate,
    updates: publisher.updates,
    whenReady: publisher.whenReady,
  };
}
