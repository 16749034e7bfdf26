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
 */

import { readFile } from "node:fs/promises";
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import { createImportPolicy, type ImportCandidate } from "../../services/common/import-policy.js";
import { localVersion } from "../../services/common/projection-content.js";
import {
  mergeRouteTable,
  type RouteTable,
  routeTableToJson,
} from "../../services/common/route-merge.js";
import { checkServiceName } from "../../services/common/service-name.js";
import { createSilentLogger, type Logger } from "../../services/runtime/logger.js";
import type { ObjectSource } from "../../services/sources/object-source.js";
import {
  type AgentHttpAddress,
  type AgentHttpServer,
  createAgentHttpServer,
} from "./agent-http.js";
import {
  type AgentMetrics,
  createAgentMetrics,
  type FollowMode,
  versionAgeSeconds,
} from "./agent-metrics.js";
import { createLatestWriter, type LatestWriter } from "./atomic-file.js";
import {
  type ConfigFollower,
  createConfigFollower,
  createReconnectBackoff,
  type FollowerClient,
  type FollowerState,
  type FollowerUpdate,
} from "./config-follower.js";
import { createDependencyFile, type DependencyFile } from "./dependency-file.js";
import { type CachedState, createLastKnownCache, type LastKnownCache } from "./last-known-cache.js";
import { createLocalRoutes, type LocalRoutes } from "./local-routes.js";
import { candidateKey, checkReceived } from "./received-projection.js";
import { createRegistrarConnection, type RegistrarConnection } from "./registrar-connection.js";

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
  /** Where to serve `/routes`, `/healthz`, `/readyz` and `/metrics`; undefined serves nothing. */
  readonly listen?: { readonly host: string; readonly port: number } | undefined;
  /** `watch` (default) or `poll`. */
  readonly mode?: FollowMode;
  /** The polling period, in milliseconds; default 10000. */
  readonly pollIntervalMs?: number;
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
  /** A ConfigService client to use instead of connecting to `registrar` (tests, embedding). */
  readonly client?: FollowerClient;
  /** The clock, in milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
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

/** What identifies a route table's content: each service's source, origin and version. */
function tableFingerprint(table: RouteTable): string {
  return table.services.map((e) => `${e.service} ${e.source} ${e.origin} ${e.version}`).join("\n");
}

/** The fingerprint of what the cache holds, to skip saves that would change nothing. */
function stateFingerprint(
  state: FollowerState,
  local: ReadonlyMap<string, ServiceConfigProjection>,
): string {
  const imported = [...state.candidates.entries()].map(
    ([key, c]) => `${key}@${c.projection.version}`,
  );
  const locals = [...local.values()].map((p) => `${p.service}@${localVersion(p)}`);
  return JSON.stringify([state.services, imported.sort(), locals.sort()]);
}

function checkDependencies(services: Iterable<string>): string[] {
  const list = [...services];
  for (const service of list) {
    const problem = checkServiceName(service);
    if (problem !== undefined) throw new TypeError(`dependency set: ${problem}`);
  }
  return list;
}

/** Creates an agent; nothing runs until `start()`. */
export function createAgent(options: AgentOptions): Agent {
  const logger = options.logger ?? createSilentLogger();
  const now = options.now ?? Date.now;
  const policy = createImportPolicy({ controlCluster: options.controlCluster });
  const keepaliveTimeoutMs = options.keepaliveTimeoutMs ?? 45_000;
  const listeners = new Set<(table: RouteTable) => void>();
  const wakers = new Set<() => void>();
  const readyWaiters: (() => void)[] = [];

  let apiDependencies = checkDependencies(options.dependencies ?? []);
  let dependencies: readonly string[] = [...new Set(apiDependencies)].sort();
  let table: RouteTable | undefined;
  /** The table's {@link tableFingerprint}, to publish only real changes. */
  let tableFingerprintValue: string | undefined;
  /** The table as JSON, made on first use after each change. */
  let tableJson: string | undefined;
  const currentJson = (): string | undefined => {
    if (table !== undefined) tableJson ??= routeTableToJson(table);
    return tableJson;
  };
  /** What `--out` holds (read at start, so a restart does not rewrite an identical file). */
  let outJson: string | undefined;
  let ready = false;
  let cacheLoaded = false;
  let cachedLocal = new Map<string, ServiceConfigProjection>();
  let imported = new Map<string, ImportCandidate>();
  let savedFingerprint: string | undefined;
  let address: AgentHttpAddress | undefined;
  let started = false;
  let stopping: Promise<void> | undefined;

  const metrics: AgentMetrics = createAgentMetrics({
    processMetrics: options.processMetrics ?? false,
    view: {
      table: () => table,
      importedServices: () => dependencies.filter((s) => imported.has(s)).length,
      dependencies: () => dependencies.length,
      dependencyProblems: () => depsFile?.problems.length ?? 0,
      localRejections: () => localRoutes?.rejections.length ?? 0,
      revision: () => follower?.state?.revision ?? 0n,
      ready: () => ready,
      mode: () => follower?.mode ?? options.mode ?? "watch",
      now,
    },
  });

  const connection: RegistrarConnection | undefined =
    options.client === undefined
      ? createRegistrarConnection({
          baseUrl: options.registrar,
          pingIntervalMs: Math.max(1_000, Math.floor(keepaliveTimeoutMs / 2)),
          onMessageBytes: (method, bytes) => metrics.countReceivedBytes(method, bytes),
        })
      : undefined;
  const client: FollowerClient = options.client ?? (connection as RegistrarConnection).client;

  const cache: LastKnownCache | undefined =
    options.cacheDir === undefined
      ? undefined
      : createLastKnownCache({
          dir: options.cacheDir,
          onError: (error) => {
            metrics.countCacheError(error.reason);
            logger.warn({ reason: error.reason, err: error.message }, "last-known cache problem");
          },
        });
  const out: LatestWriter | undefined =
    options.outFile === undefined
      ? undefined
      : createLatestWriter(options.outFile, {
          onError: (error) => {
            metrics.countOutputWrite("error");
            logger.error(
              { err: error.message, file: options.outFile },
              "cannot write the route table",
            );
          },
          onWritten: () => metrics.countOutputWrite("ok"),
        });
  const depsFile: DependencyFile | undefined =
    options.dependenciesFile === undefined
      ? undefined
      : createDependencyFile({ path: options.dependenciesFile, logger });
  const localRoutes: LocalRoutes | undefined =
    options.localSource === undefined
      ? undefined
      : createLocalRoutes({ source: options.localSource, logger });
  let server: AgentHttpServer | undefined;

  const localProjections = (): ReadonlyMap<string, ServiceConfigProjection> =>
    localRoutes?.synced === true ? localRoutes.projections : cachedLocal;

  const computeReady = (): boolean => {
    if (cacheLoaded) return true;
    const importedReady = follower?.state !== undefined || dependencies.length === 0;
    const localReady =
      localRoutes === undefined || localRoutes.synced || localRoutes.failure !== undefined;
    return importedReady && localReady;
  };

  /** Recomputes the table and publishes it when it changed. */
  const publish = () => {
    if (!ready) {
      if (!computeReady()) return;
      ready = true;
      logger.info({ fromCache: cacheLoaded }, "ready: serving a route table");
      for (const resolve of readyWaiters.splice(0)) resolve();
    }
    const next = mergeRouteTable({
      dependencies,
      local: localProjections(),
      imported,
      cluster: options.cluster,
    });
    // What decides a service's routes is its source, origin and version (a
    // version names one content, and a local version is a content digest), so
    // comparing those finds every change without serializing the table; the
    // JSON is made only when something reads it (--out, GET /routes).
    const fingerprint = tableFingerprint(next);
    if (fingerprint === tableFingerprintValue) return;
    table = next;
    tableFingerprintValue = fingerprint;
    tableJson = undefined;
    logger.info(
      {
        services: next.services.length,
        local: next.services.filter((s) => s.source === "local").length,
      },
      "route table updated",
    );
    if (out !== undefined) {
      const json = currentJson() as string;
      if (json !== outJson) {
        outJson = json;
        out.write(json);
      }
    }
    for (const listener of [...listeners]) {
      try {
        listener(next);
      } catch (error) {
        logger.error({ err: error }, "a route table listener threw");
      }
    }
    for (const wake of [...wakers]) wake();
  };

  /** Persists the accepted state when it differs from what was saved last. */
  const saveCache = () => {
    const state = follower?.state;
    if (cache === undefined || state === undefined) return;
    const local = localProjections();
    const fingerprint = stateFingerprint(state, local);
    if (fingerprint === savedFingerprint) return;
    savedFingerprint = fingerprint;
    cache.save({
      revision: state.revision,
      services: state.services,
      imported: [...state.candidates.values()],
      local: [...local.values()],
    });
  };

  const onFollowerUpdate = (update: FollowerUpdate) => {
    imported = policy.resolve(update.state.candidates.values()).winners;
    if (!update.first) {
      for (const candidate of update.fresh) {
        const age = versionAgeSeconds(candidate.projection.version, now());
        if (age !== undefined) metrics.observePropagationLag(age);
      }
    }
    saveCache();
    publish();
  };

  /** Loads the cache: its projections are checked again like received ones. */
  const loadCache = async (): Promise<FollowerState | undefined> => {
    const cached: CachedState | undefined = await cache?.load();
    if (cached === undefined) return undefined;
    const requested = new Set(cached.services);
    const candidates = new Map<string, ImportCandidate>();
    for (const entry of cached.imported) {
      const result = checkReceived(entry, requested, policy);
      if (result.candidate !== undefined) {
        candidates.set(candidateKey(entry.origin, entry.service), result.candidate);
      } else {
        metrics.countRejection(result.rejection.reason);
        logger.warn(
          { reason: result.rejection.reason },
          `cached projection dropped: ${result.rejection.message}`,
        );
      }
    }
    cachedLocal = new Map(cached.local.map((p) => [p.service, p]));
    cacheLoaded = true;
    const state = { services: cached.services, revision: cached.revision, candidates };
    savedFingerprint = stateFingerprint(state, cachedLocal);
    logger.info(
      {
        revision: String(cached.revision),
        projections: candidates.size,
        local: cachedLocal.size,
        savedAt: cached.savedAt?.toISOString(),
      },
      "serving the last-known cache",
    );
    return state;
  };

  const effectiveDependencies = () =>
    [...new Set([...apiDependencies, ...(depsFile?.services ?? [])])].sort();

  const onDependenciesChanged = () => {
    const next = effectiveDependencies();
    if (next.join(",") === dependencies.join(",")) return;
    dependencies = next;
    follower?.setServices(next);
    publish();
  };

  const onUpdate = (listener: (table: RouteTable) => void): (() => void) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  };

  async function* updates(
    iteratorOptions: { signal?: AbortSignal } = {},
  ): AsyncGenerator<RouteTable, void, undefined> {
    const { signal } = iteratorOptions;
    let pending = table;
    let wake: (() => void) | undefined;
    const waker = () => wake?.();
    const off = onUpdate((next) => {
      pending = next;
    });
    wakers.add(waker);
    signal?.addEventListener("abort", waker);
    try {
      for (;;) {
        if (pending !== undefined) {
          const next = pending;
          pending = undefined;
          yield next;
          continue;
        }
        if (stopping !== undefined || signal?.aborted === true) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    } finally {
      off();
      wakers.delete(waker);
      signal?.removeEventListener("abort", waker);
    }
  }

  /** Created by start(), after the cache is loaded (its state is the follower's initial one). */
  let follower: ConfigFollower | undefined;

  return {
    get table() {
      return table;
    },
    get ready() {
      return ready;
    },
    get dependencies() {
      return dependencies;
    },
    get mode() {
      return follower?.mode ?? options.mode ?? "watch";
    },
    metrics,
    get address() {
      return address;
    },
    async start() {
      if (started) return;
      started = true;
      if (options.outFile !== undefined) {
        outJson = await readFile(options.outFile, "utf8").catch(() => undefined);
      }
      const initial = await loadCache();
      if (initial !== undefined) {
        imported = policy.resolve(initial.candidates.values()).winners;
      }
      if (depsFile !== undefined) {
        await depsFile.start();
        depsFile.onChange(onDependenciesChanged);
      }
      dependencies = effectiveDependencies();
      if (dependencies.length === 0) {
        logger.warn("the dependency set is empty: nothing is watched until it is not");
      }
      const created = createConfigFollower({
        client,
        policy,
        services: dependencies,
        mode: options.mode ?? "watch",
        pollIntervalMs: options.pollIntervalMs,
        keepaliveTimeoutMs,
        requestTimeoutMs: Math.min(10_000, keepaliveTimeoutMs),
        backoff: createReconnectBackoff({
          initialMs: options.backoffInitialMs,
          maxMs: options.backoffMaxMs,
        }),
        initial,
        logger,
        observer: {
          onUpdate: onFollowerUpdate,
          onRejection: (rejection) => metrics.countRejection(rejection.reason),
          onStreamEvent: (type) => metrics.countStreamEvent(type),
          onReconnect: () => metrics.countReconnect(),
          onModeChange: (mode) => logger.info({ mode }, "follow mode changed"),
          onError: (operation) => metrics.countImportError(operation),
          onPoll: (result) => metrics.countPoll(result),
          onDeadConnection: () => connection?.drop("the stream went silent"),
        },
      });
      follower = created;
      publish();
      if (localRoutes !== undefined) {
        localRoutes.onChange(() => {
          saveCache();
          publish();
        });
        void localRoutes.start().then(() => publish());
      }
      created.start();
      if (options.listen !== undefined) {
        server = createAgentHttpServer({
          routes: currentJson,
          readiness: () =>
            ready
              ? { ready: true }
              : { ready: false, reason: "no cache and no complete state from the registrar yet" },
          metricsRegistry: metrics.registry,
          logger,
        });
        address = await server.listen(options.listen.host, options.listen.port);
      }
      logger.info(
        {
          url: address?.url,
          registrar: options.registrar,
          controlCluster: options.controlCluster ?? null,
          dependencies: dependencies.length,
          mode: options.mode ?? "watch",
        },
        "agent serving",
      );
    },
    stop() {
      stopping ??= (async () => {
        await follower?.stop();
        depsFile?.stop();
        await localRoutes?.stop();
        await server?.close();
        connection?.close();
        await cache?.flush();
        await out?.flush();
        listeners.clear();
        for (const wake of [...wakers]) wake();
        logger.info("agent stopped");
      })();
      return stopping;
    },
    setDependencies(services) {
      apiDependencies = checkDependencies(services);
      if (started) onDependenciesChanged();
      else dependencies = effectiveDependencies();
    },
    onUpdate,
    updates,
    whenReady() {
      if (ready) return Promise.resolve();
      return new Promise((resolve) => readyWaiters.push(resolve));
    },
  };
}
