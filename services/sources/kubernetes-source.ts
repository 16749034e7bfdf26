/**
 * The `kubernetes` object source: one `@kubernetes/client-node` informer
 * (`ListWatch`) per kind the projector reads, HTTPRoute, GRPCRoute and
 * BackendTLSPolicy (`gateway.networking.k8s.io/v1`), ReferenceGrant
 * (`gateway.networking.k8s.io/v1beta1`), Service, ConfigMap and Namespace
 * (`v1`), ServiceExport (`multicluster.x-k8s.io/v1alpha1`) and VirtualHost
 * (`mesh.aether.dev/v1alpha1`).
 *
 * How it uses client-node 1.4.0, whose informer leaves several things to
 * its caller:
 * - Lists are plain JSON GETs (see `kube-list.ts`), and items get back the
 *   `apiVersion` and `kind` the API server leaves out of built-in list items.
 * - Watches ask for bookmarks (`allowWatchBookmarks`, which the informer
 *   does not send) and a server-side `timeoutSeconds`, with a client-side
 *   deadline past it that aborts a silently dead connection.
 * - A 410 (the `Expired` ERROR event, or an HTTP 410) makes the informer
 *   itself re-list. Any other failure (a dropped connection, a refused one,
 *   an HTTP error) stops the informer for good after one `error` event; the
 *   source restarts it with exponential backoff (it resumes watching from
 *   its last resourceVersion), and also backs off when watches keep ending
 *   at once, which the informer would otherwise retry in a hot loop.
 * - A 404 (a CRD that is not installed) makes that kind empty and a
 *   problem; a fresh informer tries again every `missingRetryMs`.
 * - `stop()` during a list or a watch request, which the informer does not
 *   handle, aborts it.
 *
 * The snapshot holds every object of the kinds served (not yet of those
 * still failing to list: the source is synced once every kind has listed or
 * been found missing), sorted by apiVersion, kind, namespace and name, as
 * the server sent them (with `creationTimestamp`, `resourceVersion` and so
 * on) except for `metadata.managedFields`, which is dropped.
 *
 * client-node is loaded on `start()`, not on import: it takes seconds to
 * load, and a registrar reading a directory does not need it.
 *
 * The pieces: `kube-kind.ts` (a kind's state and its transitions),
 * `kube-informer.ts` (a kind's informer: start, missing CRD, restart with
 * backoff), `kube-watch.ts` (the hooked Watch), `kube-list.ts` (the lists);
 * this module loads the configuration, starts the informers and publishes
 * their objects, debounced.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import type { KubeObject } from "../common/kube-object.js";
import { createBackoff } from "../runtime/backoff.js";
import { createSilentLogger, type Logger } from "../runtime/logger.js";
import { sleep as sleepFor } from "../runtime/sleep.js";
import { createSyncGate } from "../runtime/sync-gate.js";
import { type InformerContext, messageOf, startInformer } from "./kube-informer.js";
import { createKindState, type KindState, type KubeResource } from "./kube-kind.js";
import { assembleObjectSource, createSnapshotPublisher, sortObjects } from "./kube-snapshot.js";
import { type ClientModule, defineHookedWatch } from "./kube-watch.js";
import type { ObjectSource, SourceProblem } from "./object-source.js";

export type { KubeResource } from "./kube-kind.js";

/**
 * The eleven resources the Kubernetes source watches (the CRDs of VirtualHost
 * and MeshConfig, cluster-scoped, from deploy/crds; a cluster without one is
 * tolerated like any missing CRD). ConfigMaps are read for
 * the CA certificates BackendTLSPolicies reference; of each, only the
 * `ca.crt` data key is kept (see `adoptObject` in `kube-kind.ts`).
 */
export const KUBERNETES_SOURCE_RESOURCES: readonly KubeResource[] = Object.freeze([
  { group: "", version: "v1", plural: "namespaces", kind: "Namespace", namespaced: false },
  { group: "", version: "v1", plural: "services", kind: "Service", namespaced: true },
  { group: "", version: "v1", plural: "configmaps", kind: "ConfigMap", namespaced: true },
  {
    group: "gateway.networking.k8s.io",
    version: "v1",
    plural: "httproutes",
    kind: "HTTPRoute",
    namespaced: true,
  },
  {
    group: "gateway.networking.k8s.io",
    version: "v1",
    plural: "grpcroutes",
    kind: "GRPCRoute",
    namespaced: true,
  },
  {
    group: "gateway.networking.k8s.io",
    version: "v1beta1",
    plural: "referencegrants",
    kind: "ReferenceGrant",
    namespaced: true,
  },
  {
    group: "gateway.networking.k8s.io",
    version: "v1",
    plural: "backendtlspolicies",
    kind: "BackendTLSPolicy",
    namespaced: true,
  },
  {
    group: "multicluster.x-k8s.io",
    version: "v1alpha1",
    plural: "serviceexports",
    kind: "ServiceExport",
    namespaced: true,
  },
  {
    group: "mesh.aether.dev",
    version: "v1alpha1",
    plural: "httpfilters",
    kind: "HTTPFilter",
    namespaced: true,
  },
  {
    group: "mesh.aether.dev",
    version: "v1alpha1",
    plural: "virtualhosts",
    kind: "VirtualHost",
    namespaced: true,
  },
  {
    group: "mesh.aether.dev",
    version: "v1alpha1",
    plural: "meshconfigs",
    kind: "MeshConfig",
    namespaced: false,
  },
]);

/** Options of {@link createKubernetesSource}. */
export interface KubernetesSourceOptions {
  /**
   * A kubeconfig file to use. Default: the in-cluster service account when
   * `KUBERNETES_SERVICE_HOST` is set, else `$KUBECONFIG` or `~/.kube/config`.
   */
  readonly kubeconfig?: string;
  /** A ready client configuration (tests); wins over `kubeconfig`. */
  readonly kubeConfig?: KubeConfig;
  /**
   * Watch one namespace only (default: all). The Namespace kind is then
   * watched with a field selector on that namespace's name.
   */
  readonly namespace?: string;
  /** Where progress and problems are logged (default: silent). */
  readonly logger?: Logger;
  /** How long a burst of changes must be quiet before listeners are told (default 100 ms). */
  readonly debounceMs?: number;
  /** The first retry delay after a failure, doubled each time (default 500 ms). */
  readonly initialRetryDelayMs?: number;
  /** The largest retry delay (default 30000 ms). */
  readonly maxRetryDelayMs?: number;
  /** How often a resource the server does not serve is tried again (default 30000 ms). */
  readonly missingRetryMs?: number;
  /** The `timeoutSeconds` of each watch; the server then ends it and it is resumed (default 300). */
  readonly watchTimeoutSeconds?: number;
}

/**
 * Loads the client configuration `path` names (a kubeconfig file; undefined:
 * in-cluster when `KUBERNETES_SERVICE_HOST` is set, else `$KUBECONFIG` or
 * `~/.kube/config`), with client-node `client`; throws a clear error when
 * there is none. The status writer loads the source's configuration with it.
 */
export function loadKubeConfig(client: ClientModule, path: string | undefined): KubeConfig {
  const config = new client.KubeConfig();
  if (path !== undefined) {
    try {
      config.loadFromFile(path);
    } catch (error) {
      throw new Error(`cannot load the kubeconfig ${path}: ${messageOf(error)}`);
    }
  } else if ((process.env.KUBERNETES_SERVICE_HOST ?? "") !== "") {
    config.loadFromCluster();
  } else {
    const kubeconfigEnv = process.env.KUBECONFIG ?? "";
    if (kubeconfigEnv === "" && !existsSync(join(homedir(), ".kube", "config"))) {
      throw new Error(
        "no Kubernetes configuration: not in a cluster (KUBERNETES_SERVICE_HOST is unset), " +
          "no --kubeconfig, no $KUBECONFIG and no ~/.kube/config",
      );
    }
    config.loadFromDefault();
  }
  if (config.getCurrentCluster() === null) {
    throw new Error(`the Kubernetes configuration ${path ?? ""} has no current cluster`.trim());
  }
  return config;
}

/**
 * Creates a source following the Gateway API objects of a Kubernetes
 * cluster through the API server (see the module comment). `start()` loads
 * the configuration and client-node and starts the informers; a missing or
 * unreadable configuration fails `whenSynced()` (and shows in `problems()`)
 * instead of throwing. `whenSynced()` resolves once every kind has listed or
 * been found not served. A stopped source cannot be started again.
 */
export function createKubernetesSource(options: KubernetesSourceOptions = {}): ObjectSource {
  const namespace = options.namespace;
  const name = namespace === undefined ? "kubernetes" : `kubernetes namespace=${namespace}`;
  const logger = (options.logger ?? createSilentLogger()).child({ source: name });
  const debounceMs = options.debounceMs ?? 100;
  const initialDelayMs = options.initialRetryDelayMs ?? 500;
  const maxDelayMs = options.maxRetryDelayMs ?? 30_000;
  const missingRetryMs = options.missingRetryMs ?? 30_000;
  const watchTimeoutSeconds = options.watchTimeoutSeconds ?? 300;
  const publisher = createSnapshotPublisher(logger, name);
  const gate = createSyncGate();

  const kinds: KindState[] = KUBERNETES_SOURCE_RESOURCES.map((resource) =>
    createKindState(
      resource,
      namespace,
      createBackoff({ initialMs: initialDelayMs, maxMs: maxDelayMs }),
    ),
  );
  let startProblem: SourceProblem | undefined;
  let stopped = false;
  let debounceTimer: NodeJS.Timeout | undefined;
  const listAborts = new Set<AbortController>();

  /** Aborted when the source stops: cuts every wait short. */
  const stopSignal = new AbortController();
  /** Waits `ms`, or less when the source stops. */
  const sleep = (ms: number) => sleepFor(ms, stopSignal.signal);

  const publishNow = () => {
    debounceTimer = undefined;
    if (stopped) return;
    const objects = kinds.flatMap((k) => (k.missing ? [] : (k.informer?.list() ?? [])));
    publisher.publish(sortObjects(objects as KubeObject[]), gate.synced);
  };

  const scheduleChange = () => {
    if (stopped || !gate.synced) return;
    if (debounceTimer !== undefined) clearTimeout(debounceTimer);
    debounceTimer = setTimeout(publishNow, debounceMs);
  };

  const checkSynced = () => {
    if (gate.synced || stopped || !kinds.every((k) => k.listed)) return;
    publishNow();
    gate.open();
    logger.info(
      { objects: publisher.snapshot().length, missing: kinds.filter((k) => k.missing).length },
      "listed every kind",
    );
  };

  const launch = async () => {
    const loaded = await import("@kubernetes/client-node");
    const kubeConfig = options.kubeConfig ?? loadKubeConfig(loaded, options.kubeconfig);
    if (kubeConfig.getCurrentCluster() === null) {
      throw new Error("the Kubernetes configuration has no current cluster");
    }
    if (stopped) return;
    const context: InformerContext = {
      client: loaded,
      config: kubeConfig,
      HookedWatch: defineHookedWatch(loaded, watchTimeoutSeconds),
      logger,
      initialDelayMs,
      maxDelayMs,
      missingRetryMs,
      listAborts,
      stopped: () => stopped,
      sleep,
      changed: scheduleChange,
      checkSynced,
    };
    logger.info(
      { server: kubeConfig.getCurrentCluster()?.server, namespace: namespace ?? "(all)" },
      "starting informers",
    );
    for (const kind of kinds) startInformer(context, kind);
  };

  return assembleObjectSource({
    name,
    logger,
    publisher,
    gate,
    run: launch,
    failed(message) {
      startProblem = { where: "kubernetes", message };
    },
    async release() {
      stopped = true;
      if (debounceTimer !== undefined) clearTimeout(debounceTimer);
      stopSignal.abort();
      for (const controller of listAborts) controller.abort();
      const stopping: Promise<void>[] = [];
      for (const kind of kinds) {
        if (kind.retryTimer !== undefined) clearTimeout(kind.retryTimer);
        kind.retryTimer = undefined;
        if (kind.informer !== undefined) stopping.push(kind.informer.stop().catch(() => {}));
      }
      await Promise.all(stopping);
    },
    problems() {
      const problems = kinds.flatMap((k) => (k.problem === undefined ? [] : [k.problem]));
      return startProblem === undefined ? problems : [startProblem, ...problems];
    },
  });
}
