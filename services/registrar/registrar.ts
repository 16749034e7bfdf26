/**
 * The registrar as a library: wires a store, the config cache, the import
 * policy, the ConfigService, health, reflection and metrics onto one HTTP
 * server. `main.ts` is only flag parsing and signal handling around this.
 */
import { readFile } from "node:fs/promises";
import { fromJson } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  ConfigService,
  type ExportStatus as ExportStatusMessage,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { createImportPolicy } from "../common/import-policy.js";
import { checkRecordShape } from "../common/record-shape.js";
import { checkRecordName } from "../common/service-name.js";
import { type EtcdSecurity, readEtcdSecurity } from "../runtime/etcd-security.js";
import { createSilentLogger, type Logger } from "../runtime/logger.js";
import type { SigningKey } from "../signing/signing-key.js";
import { createDirSource } from "../sources/dir-source.js";
import { createKubeStatusPatcher } from "../sources/kube-status-patch.js";
import { createKubernetesSource } from "../sources/kubernetes-source.js";
import type { ObjectSource } from "../sources/object-source.js";
import { type ConfigCache, createConfigCache } from "./cache/config-cache.js";
import { describeHolds } from "./cache/delete-holds.js";
import {
  createEtcdLeaderElection,
  exportElectionName,
  legacyExportElectionName,
} from "./export/etcd-leader-election.js";
import { createExportController, type ExportController } from "./export/export-controller.js";
import { createAlwaysLeader, type LeaderElection } from "./export/leader-election.js";
import {
  createStatusWriter,
  type FleetSummaries,
  type StatusSink,
} from "./export/status-writer.js";
import { createAgentReports } from "./fleet/agent-reports.js";
import { EMPTY_STATUS_FEED } from "./fleet/empty-inputs.js";
import type { AgentReportsView, StatusFeed } from "./fleet/fleet-inputs.js";
import { createFleetPublishing } from "./fleet/fleet-publishing.js";
import { type RegistrarConfig, readPageTokenKey } from "./registrar-flags.js";
import { createRegistrarMetrics, type RegistrarMetrics } from "./registrar-metrics.js";
import { createRegistrarSigning } from "./registrar-signing.js";
import { createAdminServer } from "./server/admin-server.js";
import {
  createHttpServer,
  type HttpServerRouteContext,
  type ListenAddress,
  type Readiness,
} from "./server/create-http-server.js";
import { createHealthService } from "./server/health-service.js";
import { registerReflectionServices } from "./server/reflection-service.js";
import { createRefusals, type Refusals } from "./server/refusals.js";
import { type ConfigServiceOptions, createConfigService } from "./service/config-service.js";
import { exportStatusMessage } from "./service/export-status-message.js";
import { createPageTokens, type PageTokens } from "./service/page-token.js";
import { createWatchLane } from "./service/watch-lane.js";
import { WATCH_CONFIG_PATH } from "./service/watch-lane-protocol.js";
import { createWatchStreams } from "./service/watch-stream.js";
import { createAccessMonitor } from "./store/access-monitor.js";
import type { ConfigStore } from "./store/config-store.js";
import { createEtcdStore } from "./store/etcd-store.js";
import { createMemoryStore } from "./store/memory-store.js";

/** Options of {@link createRegistrar}. */
export interface RegistrarOptions {
  /** The validated configuration (see `parseRegistrarFlags`). */
  readonly config: RegistrarConfig;
  /** Logger; silent by default. */
  readonly logger?: Logger;
  /** A store to use instead of the one `config.store` describes (tests, embedding). */
  readonly store?: ConfigStore;
  /** Whether `/metrics` includes Node's process metrics; default true. */
  readonly processMetrics?: boolean;
  /**
   * An object source to export from instead of the one `config.exportSource`
   * describes (tests, embedding); exporting is enabled when either is set.
   */
  readonly exportSource?: ObjectSource;
  /** A leadership provider instead of the one the store implies (tests, embedding). */
  readonly leadership?: LeaderElection;
}

/** A registrar created by {@link createRegistrar}. */
export interface Registrar {
  /** The store it serves. */
  readonly store: ConfigStore;
  /** Its cache of the store. */
  readonly cache: ConfigCache;
  /** Its metrics. */
  readonly metrics: RegistrarMetrics;
  /** Its export controller, or undefined when it does not export (no export source). */
  readonly exporter: ExportController | undefined;
  /**
   * Every cluster's published import status (`fleet/status-feed.ts`); one
   * that never syncs when the store has no status store beside it.
   */
  readonly statusFeed: StatusFeed;
  /** The bound address once started. */
  readonly address: ListenAddress | undefined;
  /** The admin port's bound address once started (with `--admin-listen`). */
  readonly adminAddress: ListenAddress | undefined;
  /** The agents reporting what they applied (`ReportAppliedConfig`), judged on demand. */
  readonly agentReports: AgentReportsView;
  /**
   * Starts following the store and serving. Resolves once listening; the
   * store may still be unreachable then (`/readyz` says so until it syncs).
   * Rejects, having released the store and the cache, when a port cannot be
   * bound or the TLS files are refused.
   */
  start(): Promise<ListenAddress>;
  /**
   * Drains: open watch streams end cleanly (OK), in-flight requests finish
   * within the drain timeout, then the cache and the store are closed.
   */
  stop(): Promise<void>;
  /**
   * The operator's release of held deletes (mass disappearances the cache
   * holds; see `cache/delete-holds.ts`): the held deletes of `origin` (every
   * origin when undefined) are applied and published now. Returns how many
   * deletes were applied. `main.ts` calls it on SIGUSR2.
   */
  releaseHolds(origin?: string): number;
}

/**
 * Creates the store a configuration describes, with `security` (default: its
 * etcd TLS and password files, read now).
 */
export function createConfiguredStore(
  config: RegistrarConfig,
  logger: Logger,
  security: EtcdSecurity | undefined = readEtcdSecurity(config),
): ConfigStore {
  if (config.store === "etcd") {
    return createEtcdStore({
      origin: config.cluster,
      endpoints: config.etcdEndpoints,
      prefix: config.etcdPrefix,
      logger,
      requestTimeoutMs: config.storeTimeoutMs,
      security,
    });
  }
  return createMemoryStore({ origin: config.cluster, prefix: config.etcdPrefix, logger });
}

/**
 * Reads a seed file: `{"projections": [ServiceConfigProjection as proto JSON, …]}`.
 * Throws an Error naming the file and the problem when it does not parse.
 */
export async function readSeedFile(path: string): Promise<ServiceConfigProjection[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, "utf8"));
  } catch (error) {
    throw new Error(`seed file ${path}: ${(error as Error).message}`);
  }
  const list = (parsed as { projections?: unknown }).projections;
  if (!Array.isArray(list)) throw new Error(`seed file ${path}: expected {"projections": [...]}`);
  return list.map((item, index) => {
    try {
      const projection = fromJson(ServiceConfigProjectionSchema, item);
      const problem =
        checkRecordName(projection.service) ?? checkRecordShape(projection.service, projection);
      if (problem !== undefined) throw new Error(problem);
      return projection;
    } catch (error) {
      throw new Error(`seed file ${path}: projections[${index}]: ${(error as Error).message}`);
    }
  });
}

/**
 * Creates the export controller a configuration asks for (undefined without an
 * export source): the source it names (or `source`), and the leader election
 * the store implies (an etcd election per origin, or always the leader in one
 * process), unless `leadership` is given. With `--export-source kubernetes`
 * (and no `source` given) the leader also writes the status of the objects
 * it projects back through the same kubeconfig (`export/status-writer.ts`).
 */
export function createConfiguredExporter(
  config: RegistrarConfig,
  store: ConfigStore,
  options: {
    readonly logger: Logger;
    readonly metrics: RegistrarMetrics;
    readonly source?: ObjectSource;
    readonly leadership?: LeaderElection;
    /** The key projections are signed with now (`--signing-key-file`); default: unsigned. */
    readonly signingKey?: () => SigningKey | undefined;
    /** The etcd TLS material and credentials; default: the configuration's files, read now. */
    readonly security?: EtcdSecurity;
    /** The fleet's view, for the fleet condition the status writer adds; default none. */
    readonly fleet?: FleetSummaries;
  },
): ExportController | undefined {
  const { logger } = options;
  let source = options.source;
  let statusSink: StatusSink | undefined;
  if (source === undefined && config.exportSource?.kind === "kubernetes") {
    // The export leader writes the status of the objects it projects back, through the same client configuration.
    statusSink = createStatusWriter({
      patch: createKubeStatusPatcher(
        config.kubeconfig === undefined ? {} : { kubeconfig: config.kubeconfig },
      ),
      logger: logger.child({ part: "export-status" }),
      registry: options.metrics.registry,
      ...(options.fleet === undefined ? {} : { fleet: options.fleet }),
    });
  }
  if (source === undefined && config.exportSource !== undefined) {
    const sourceLogger = logger.child({ part: "export-source" });
    source =
      config.exportSource.kind === "dir"
        ? createDirSource({ path: config.exportSource.path, logger: sourceLogger })
        : createKubernetesSource({
            ...(config.kubeconfig === undefined ? {} : { kubeconfig: config.kubeconfig }),
            logger: sourceLogger,
          });
  }
  if (source === undefined) return undefined;
  const leadership =
    options.leadership ??
    (store.kind === "etcd" && config.etcdEndpoints.length > 0
      ? createEtcdLeaderElection({
          endpoints: config.etcdEndpoints,
          name: exportElectionName(store.prefix, config.cluster),
          // Candidates of releases before the per-origin subtree campaign
          // there: never lead beside them during a rolling upgrade.
          deferTo: [legacyExportElectionName(store.prefix, config.cluster)],
          ttlMs: config.electionTtlMs,
          requestTimeoutMs: config.storeTimeoutMs,
          security: options.security ?? readEtcdSecurity(config),
          logger: logger.child({ part: "election" }),
        })
      : createAlwaysLeader());
  return createExportController({
    source,
    store,
    origin: config.cluster,
    controlCluster: config.controlCluster,
    leadership,
    logger: logger.child({ part: "export" }),
    metrics: options.metrics.exportMetrics,
    ...(options.signingKey === undefined ? {} : { signingKey: options.signingKey }),
    ...(statusSink === undefined ? {} : { statusSink }),
  });
}

/**
 * Maps the export controller's state to the GetConfigStatus message, its
 * lists bounded (see `export-status-message.ts`).
 */
export function toExportStatusMessage(exporter: ExportController): ExportStatusMessage {
  return exportStatusMessage(exporter.enabled, exporter.status());
}

/** Page tokens sealed with `--page-token-key-file`'s key, or a random key of this process. */
function createConfiguredPageTokens(config: RegistrarConfig): PageTokens {
  return createPageTokens({
    ttlMs: config.pageTokenTtlMs,
    ...(config.pageTokenKeyFile === undefined
      ? {}
      : { key: readPageTokenKey(config.pageTokenKeyFile) }),
  });
}

/** The `--admin-listen` server and where it listens, or none without the flag. */
function createConfiguredAdmin(
  config: RegistrarConfig,
  options: Parameters<typeof createAdminServer>[0],
) {
  if (config.adminListen === undefined) return undefined;
  return { at: config.adminListen, server: createAdminServer(options) };
}

/**
 * Creates a registrar; nothing runs until `start()`.
 *
 * Why it is long: it is only the wiring of the parts (store, signing,
 * policy, cache, metrics, exporter, agent reports, fleet status, server,
 * admin) and their start and stop order, flat; the closures share those
 * parts, and splitting them further would pass them around instead.
 */
export function createRegistrar(options: RegistrarOptions): Registrar {
  const { config } = options;
  const logger = options.logger ?? createSilentLogger();
  // The etcd TLS and password files are read once, for the store and the election.
  const security = config.store === "etcd" ? readEtcdSecurity(config) : undefined;
  const store =
    options.store ?? createConfiguredStore(config, logger.child({ part: "store" }), security);
  const signing = createRegistrarSigning({
    config,
    logger: logger.child({ part: "signing" }),
    onOriginKeys: () => {
      const readmitted = cache.readmit();
      if (readmitted > 0) {
        logger.info({ readmitted }, "origin keys changed: accepted projections refused before");
      }
    },
    onSigningKey: () => exporter?.resign(),
  });
  const policy = createImportPolicy({
    controlCluster: config.controlCluster,
    maxFutureMs: config.maxVersionSkewMs,
    ...(signing.check === undefined ? {} : { signatures: signing.check }),
  });
  const pageTokens = createConfiguredPageTokens(config);
  let metrics: RegistrarMetrics | undefined;
  const cache = createConfigCache({
    store,
    policy,
    logger: logger.child({ part: "cache" }),
    onRejection: (rejection) => metrics?.countRejection(rejection.reason),
    massDelete: config.massDelete,
    importObserver: {
      onDeletes: (origin, count) => metrics?.countDeletes(origin, count),
    },
  });
  const agentReports = createAgentReports({
    intervalMs: config.agentReportIntervalMs,
    logger: logger.child({ part: "agent-reports" }),
    countReport: (result) => metrics?.countAgentReport(result),
  });
  metrics = createRegistrarMetrics({
    store,
    cache,
    processMetrics: options.processMetrics ?? true,
    reportingAgents: () => agentReports.size,
  });
  signing.registerMetrics(metrics.registry);
  // Publishes this replica's import status (with its agents' reports); follows every cluster's.
  const fleet = createFleetPublishing({
    config,
    store,
    cache,
    agents: agentReports.view,
    security,
    registry: metrics.registry,
    logger,
  });
  const exporter = createConfiguredExporter(config, store, {
    signingKey: signing.signingKey,
    logger,
    metrics,
    ...(fleet === undefined ? {} : { fleet: fleet.view }),
    ...(options.exportSource === undefined ? {} : { source: options.exportSource }),
    ...(options.leadership === undefined ? {} : { leadership: options.leadership }),
    ...(security === undefined ? {} : { security }),
  });
  // One counter and one rate-limited log for every refusal, the server's and WatchConfig's.
  const refusals = createRefusals({
    registry: metrics.registry,
    logger: logger.child({ part: "limits" }),
  });
  // Whether the store credentials allow what this registrar does (etcd RBAC):
  // a denial makes it not ready, naming what is denied.
  const access = createAccessMonitor({
    store,
    write: exporter?.enabled === true,
    logger: logger.child({ part: "store-access" }),
  });
  const readiness = () => storeReadiness(cache, access.denied);

  const server = createHttpServer({
    logger: logger.child({ part: "http" }),
    metricsRegistry: metrics.registry,
    limits: config.serverLimits,
    refusals,
    onUndecodedRequest: (method) => metrics.countUndecoded(method),
    readiness,
    ...(config.tls === undefined ? {} : { tls: config.tls }),
    routes: (router, context) =>
      registerRoutes(router, context, {
        config,
        store,
        cache,
        policy,
        metrics,
        refusals,
        pageTokens,
        exporter,
        reportApplied: agentReports.handle,
        ...(fleet === undefined ? {} : { fleetStatus: fleet.view.fleetStatus }),
        readiness,
        logger: logger.child({ part: "config-service" }),
      }),
  });

  const admin = createConfiguredAdmin(config, {
    readiness,
    metricsRegistry: metrics.registry,
    drainSignal: server.drainSignal,
    logger: logger.child({ part: "admin" }),
  });

  let stopping: Promise<void> | undefined;
  return {
    store,
    cache,
    metrics,
    exporter,
    agentReports: agentReports.view,
    statusFeed: fleet?.feed ?? EMPTY_STATUS_FEED,
    get address() {
      return server.address;
    },
    get adminAddress() {
      return admin?.server.address;
    },
    async start() {
      signing.start();
      cache.start();
      agentReports.start();
      access.start();
      fleet?.start();
      let address: ListenAddress;
      let adminAddress: ListenAddress | undefined;
      try {
        address = await server.listen(config.host, config.port);
        adminAddress = await admin?.server.listen(admin.at.host, admin.at.port);
      } catch (error) {
        // A port in use or refused TLS files: release the store and the cache too.
        await this.stop();
        throw error;
      }
      logger.info(
        {
          url: address.url,
          adminUrl: adminAddress?.url ?? null,
          cluster: config.cluster,
          store: store.kind,
          controlCluster: config.controlCluster ?? null,
          exportSource: config.exportSource ?? null,
        },
        "registrar serving",
      );
      exporter?.start();
      return address;
    },
    releaseHolds(origin) {
      const released = cache.releaseHolds(origin);
      logger.warn({ origin: origin ?? null, released }, "held deletes released by the operator");
      return released;
    },
    stop() {
      stopping ??= (async () => {
        // Give up the export leadership first, so another replica takes over at once.
        await exporter?.stop();
        agentReports.stop();
        await server.close({ graceMs: config.drainTimeoutMs });
        // Probes see `draining` on the admin port until the API port is closed.
        await admin?.server.close();
        await fleet?.stop();
        await cache.stop();
        signing.close();
        await access.stop();
        await store.close();
        logger.info("registrar stopped");
      })();
      return stopping;
    },
  };
}

/** What {@link registerRoutes} wires together. */
interface RouteParts
  extends Pick<
    ConfigServiceOptions,
    "store" | "cache" | "policy" | "reportApplied" | "fleetStatus"
  > {
  readonly metrics: RegistrarMetrics;
  readonly config: RegistrarConfig;
  readonly refusals: Refusals;
  readonly pageTokens: PageTokens;
  readonly exporter: ExportController | undefined;
  /** What `/readyz` reports; the gRPC health service says SERVING exactly when it is ready. */
  readonly readiness: () => Readiness;
  readonly logger: Logger;
}

/**
 * Registers health (SERVING when ready, as `/readyz`), ConfigService and
 * reflection, and the WatchConfig lane in front of ConfigService's streams.
 */
function registerRoutes(
  router: ConnectRouter,
  server: HttpServerRouteContext,
  parts: RouteParts,
): void {
  const { config, cache, exporter, metrics } = parts;
  const { drainSignal } = server;
  const watches = createWatchStreams({
    cache,
    drainSignal,
    keepaliveMs: config.keepaliveMs,
    maxBacklog: config.maxWatchBacklog,
    maxStreams: config.maxWatchStreams,
    refusals: parts.refusals,
    metrics,
  });
  server.serveDirect(
    WATCH_CONFIG_PATH,
    createWatchLane({
      watches,
      maxBodyBytes: server.maxBodyBytes,
      shutdownSignal: server.shutdownSignal,
      logger: parts.logger,
      onUndecoded: () => metrics.countUndecoded("WatchConfig"),
      onEnd: (code) => metrics.countRpc("WatchConfig", code),
    }),
  );
  const serving = () =>
    parts.readiness().ready
      ? HealthCheckResponse_ServingStatus.SERVING
      : HealthCheckResponse_ServingStatus.NOT_SERVING;
  const health = createHealthService({
    drainSignal,
    status: (service) =>
      service === "" || service === ConfigService.typeName ? serving() : undefined,
  });
  router.service(Health, health.implementation);
  router.service(
    ConfigService,
    createConfigService({
      origin: config.cluster,
      store: parts.store,
      cache,
      policy: parts.policy,
      metrics,
      logger: parts.logger,
      drainSignal,
      watches,
      pageTokens: parts.pageTokens,
      readLimits: { concurrency: config.listReadConcurrency, queue: config.listReadQueue },
      readWaitMs: config.storeTimeoutMs,
      reportApplied: parts.reportApplied,
      ...(parts.fleetStatus === undefined ? {} : { fleetStatus: parts.fleetStatus }),
      ...(exporter === undefined ? {} : { exportStatus: () => toExportStatusMessage(exporter) }),
    }),
  );
  registerReflectionServices(router, [ConfigService, Health]);
}

/**
 * What `/readyz` reports, on both the main and the admin port: ready once the
 * cache synced, unless the store denies this registrar something it needs.
 */
function storeReadiness(cache: ConfigCache, accessDenied: string | undefined): Readiness {
  if (accessDenied !== undefined) return { ready: false, reason: `store ${accessDenied}` };
  if (cache.state === "synced") {
    const degraded = describeHolds(cache.holds());
    return degraded === undefined ? { ready: true } : { ready: true, degraded };
  }
  if (cache.state === "starting") return { ready: false, reason: "not synced with the store yet" };
  return {
    ready: false,
    reason: `store unavailable: ${cache.lastError?.message ?? cache.state}`,
  };
}
