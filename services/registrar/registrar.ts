/**
 * The registrar as a library: wires a store, the config cache, the import
 * policy, the ConfigService, health, reflection and metrics onto one HTTP
 * server. `main.ts` is only flag parsing and signal handling around this.
 */
import { readFile } from "node:fs/promises";
import { fromJson } from "@bufbuild/protobuf";
import { ConfigService } from "../../gen/aether/registry/v1/config_service_pb.js";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { createImportPolicy } from "../common/import-policy.js";
import { checkServiceName } from "../common/service-name.js";
import { type ConfigCache, createConfigCache } from "./config-cache.js";
import { createConfigService } from "./config-service.js";
import { createSilentLogger, type Logger } from "./logger.js";
import type { RegistrarConfig } from "./registrar-flags.js";
import { createRegistrarMetrics, type RegistrarMetrics } from "./registrar-metrics.js";
import { createHttpServer, type ListenAddress } from "./server/create-http-server.js";
import { createHealthService } from "./server/health-service.js";
import { registerReflectionServices } from "./server/reflection-service.js";
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
}

/** A registrar created by {@link createRegistrar}. */
export interface Registrar {
  /** The store it serves. */
  readonly store: ConfigStore;
  /** Its cache of the store. */
  readonly cache: ConfigCache;
  /** Its metrics. */
  readonly metrics: RegistrarMetrics;
  /** The bound address once started. */
  readonly address: ListenAddress | undefined;
  /**
   * Starts following the store and serving. Resolves once listening; the
   * store may still be unreachable then (`/readyz` says so until it syncs).
   */
  start(): Promise<ListenAddress>;
  /**
   * Drains: open watch streams end cleanly (OK), in-flight requests finish
   * within the drain timeout, then the cache and the store are closed.
   */
  stop(): Promise<void>;
}

/** Creates the store a configuration describes. */
export function createConfiguredStore(config: RegistrarConfig, logger: Logger): ConfigStore {
  if (config.store === "etcd") {
    return createEtcdStore({
      origin: config.cluster,
      endpoints: config.etcdEndpoints,
      prefix: config.etcdPrefix,
      logger,
      requestTimeoutMs: config.storeTimeoutMs,
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
      const problem = checkServiceName(projection.service);
      if (problem !== undefined) throw new Error(problem);
      return projection;
    } catch (error) {
      throw new Error(`seed file ${path}: projections[${index}]: ${(error as Error).message}`);
    }
  });
}

/** Creates a registrar; nothing runs until `start()`. */
export function createRegistrar(options: RegistrarOptions): Registrar {
  const { config } = options;
  const logger = options.logger ?? createSilentLogger();
  const store = options.store ?? createConfiguredStore(config, logger.child({ part: "store" }));
  const policy = createImportPolicy({ controlCluster: config.controlCluster });
  let metrics: RegistrarMetrics | undefined;
  const cache = createConfigCache({
    store,
    policy,
    logger: logger.child({ part: "cache" }),
    onRejection: (rejection) => metrics?.countRejection(rejection.reason),
  });
  metrics = createRegistrarMetrics({
    store,
    cache,
    processMetrics: options.processMetrics ?? true,
  });
  const serving = () =>
    cache.state === "synced"
      ? HealthCheckResponse_ServingStatus.SERVING
      : HealthCheckResponse_ServingStatus.NOT_SERVING;

  const server = createHttpServer({
    logger: logger.child({ part: "http" }),
    metricsRegistry: metrics.registry,
    readiness: () => {
      if (cache.state === "synced") return { ready: true };
      if (cache.state === "starting")
        return { ready: false, reason: "not synced with the store yet" };
      return {
        ready: false,
        reason: `store unavailable: ${cache.lastError?.message ?? cache.state}`,
      };
    },
    routes: (router, { drainSignal }) => {
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
          store,
          cache,
          policy,
          metrics,
          logger: logger.child({ part: "config-service" }),
          drainSignal,
          keepaliveMs: config.keepaliveMs,
        }),
      );
      registerReflectionServices(router, [ConfigService, Health]);
    },
  });

  let stopping: Promise<void> | undefined;
  return {
    store,
    cache,
    metrics,
    get address() {
      return server.address;
    },
    async start() {
      cache.start();
      const address = await server.listen(config.host, config.port);
      logger.info(
        {
          url: address.url,
          cluster: config.cluster,
          store: store.kind,
          controlCluster: config.controlCluster ?? null,
        },
        "registrar serving",
      );
      return address;
    },
    stop() {
      stopping ??= (async () => {
        await server.close({ graceMs: config.drainTimeoutMs });
        await cache.stop();
        await store.close();
        logger.info("registrar stopped");
      })();
      return stopping;
    },
  };
}
