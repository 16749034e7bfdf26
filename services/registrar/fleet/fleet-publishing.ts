/**
 * The registrar's fleet-status parts, created together from its
 * configuration: the status store beside its config store (over the same
 * memory backend or etcd), the feed of every cluster's published status,
 * the local source's digests (`--local-source`) and this replica's
 * publisher, and the fleet view (GetFleetStatus, the fleet gauges, the
 * status writer's fleet condition) over the feed. The registrar starts and
 * stops them with itself.
 */
import type { Registry } from "prom-client";
import { Counter } from "prom-client";
import { localDigests } from "../../common/local-projection.js";
import type { EtcdSecurity } from "../../runtime/etcd-security.js";
import type { Logger } from "../../runtime/logger.js";
import { createDirSource } from "../../sources/dir-source.js";
import { createKubernetesSource } from "../../sources/kubernetes-source.js";
import { createLocalRoutes, type LocalRoutes } from "../../sources/local-routes.js";
import type { ConfigCache } from "../cache/config-cache.js";
import type { RegistrarConfig } from "../registrar-flags.js";
import type { ConfigStore } from "../store/config-store.js";
import type { MemoryConfigStore } from "../store/memory-store.js";
import type { StatusStore } from "../store/status-store.js";
import { createEtcdStatusStore } from "../store/status-store-etcd.js";
import { createMemoryStatusStore } from "../store/status-store-memory.js";
import type { AgentReportsView, StatusFeed } from "./fleet-inputs.js";
import { createFleetView, type FleetStatusView } from "./fleet-view.js";
import { createStatusFeed } from "./status-feed.js";
import { createStatusPublisher, type LocalDigests } from "./status-publisher.js";

/** What {@link createFleetPublishing} wires. */
export interface FleetPublishingOptions {
  readonly config: RegistrarConfig;
  /** The registrar's config store (its kind decides the status store's). */
  readonly store: ConfigStore;
  readonly cache: ConfigCache;
  readonly agents: AgentReportsView;
  readonly security: EtcdSecurity | undefined;
  readonly registry: Registry;
  readonly logger: Logger;
}

/** The fleet-status parts of one registrar. */
export interface FleetPublishing {
  /** Every cluster's published status. */
  readonly feed: StatusFeed;
  /** The fleet view over the feed and the cache. */
  readonly view: FleetStatusView;
  /** Starts the local source, the feed and the publisher. */
  start(): void;
  /** Stops them and closes the status store. */
  stop(): Promise<void>;
}

/**
 * Creates the parts; undefined when the config store is neither an etcd
 * store nor a memory store with a backend (a test's stand-in): nothing is
 * published then.
 */
export function createFleetPublishing(
  options: FleetPublishingOptions,
): FleetPublishing | undefined {
  const { config, logger } = options;
  const statusStore = createStatusStoreFor(options);
  if (statusStore === undefined) return undefined;
  const feed = createStatusFeed({
    store: statusStore,
    logger: logger.child({ part: "status-feed" }),
  });
  new Counter({
    name: "aether_config_status_feed_invalid_values_total",
    help: "Published status values skipped because they do not decode.",
    registers: [options.registry],
    collect() {
      this.reset();
      this.inc(statusStore.counters.invalidValues);
    },
  });
  const localRoutes = createConfiguredLocalRoutes(config, logger);
  const publisher = createStatusPublisher({
    store: statusStore,
    replica: config.replicaId,
    cache: options.cache,
    agents: options.agents,
    ...(localRoutes === undefined ? {} : { local: digestsOf(localRoutes) }),
    feed,
    controlCluster: config.controlCluster ?? "",
    intervalMs: config.statusIntervalMs,
    heartbeatMs: config.statusHeartbeatMs,
    registry: options.registry,
    logger: logger.child({ part: "status-publisher" }),
  });
  const view = createFleetView({
    feed,
    cache: options.cache,
    metrics: { registry: options.registry },
  });
  return {
    feed,
    view,
    start() {
      feed.start();
      publisher.start();
      // The digests follow the local source once it has been read.
      void localRoutes?.start();
    },
    async stop() {
      view.stop();
      await publisher.stop();
      await feed.stop();
      await localRoutes?.stop();
      await statusStore.close();
    },
  };
}

/** The status store over the config store's data, or undefined when it has none we know. */
function createStatusStoreFor(options: FleetPublishingOptions): StatusStore | undefined {
  const { config, store } = options;
  const logger = options.logger.child({ part: "status-store" });
  if (store.kind === "memory" && "backend" in store) {
    const { backend } = store as MemoryConfigStore;
    return createMemoryStatusStore({
      backend,
      cluster: config.cluster,
      prefix: store.prefix,
      logger,
    });
  }
  if (store.kind === "etcd" && config.etcdEndpoints.length > 0) {
    return createEtcdStatusStore({
      cluster: config.cluster,
      endpoints: config.etcdEndpoints,
      prefix: store.prefix,
      requestTimeoutMs: config.storeTimeoutMs,
      ...(options.security === undefined ? {} : { security: options.security }),
      logger,
    });
  }
  return undefined;
}

/** The local routes `--local-source` names, or undefined without it. */
function createConfiguredLocalRoutes(
  config: RegistrarConfig,
  logger: Logger,
): LocalRoutes | undefined {
  const spec = config.localSource;
  if (spec === undefined) return undefined;
  const sourceLogger = logger.child({ part: "local-source" });
  const source =
    spec.kind === "dir"
      ? createDirSource({ path: spec.path, logger: sourceLogger })
      : createKubernetesSource({
          ...(config.kubeconfig === undefined ? {} : { kubeconfig: config.kubeconfig }),
          logger: sourceLogger,
        });
  return createLocalRoutes({ source, logger: sourceLogger });
}

/** The digests of the local routes, computed once per re-projection. */
function digestsOf(routes: LocalRoutes): LocalDigests {
  let memo: { of: LocalRoutes["projections"]; digests: Map<string, string> } | undefined;
  return {
    digests() {
      const projections = routes.projections;
      if (memo?.of !== projections) memo = { of: projections, digests: localDigests(projections) };
      return memo.digests;
    },
    onChange: (listener) => routes.onChange(listener),
  };
}
