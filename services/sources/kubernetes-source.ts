/**
 * The `kubernetes` object source: one `@kubernetes/client-node` informer
 * (`ListWatch`) per kind the projector reads, HTTPRoute and GRPCRoute
 * (`gateway.networking.k8s.io/v1`), ReferenceGrant
 * (`gateway.networking.k8s.io/v1beta1`), Service and Namespace (`v1`) and
 * ServiceExport (`multicluster.x-k8s.io/v1alpha1`).
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
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type {
  KubeConfig,
  KubernetesListObject,
  KubernetesObject,
  ListWatch,
} from "@kubernetes/client-node";
import type { KubeObject } from "../common/kube-object.js";
import { type Backoff, createBackoff } from "../runtime/backoff.js";
import { createSilentLogger, type Logger } from "../runtime/logger.js";
import { sleep as sleepFor } from "../runtime/sleep.js";
import { createSyncGate } from "../runtime/sync-gate.js";
import { KubeApiError, kubeGetJson } from "./kube-list.js";
import { assembleObjectSource, createSnapshotPublisher, sortObjects } from "./kube-snapshot.js";
import type { ObjectSource, SourceProblem } from "./object-source.js";

/** A resource the source watches. */
export interface KubeResource {
  /** The API group (`""` for the core group). */
  readonly group: string;
  /** The version served. */
  readonly version: string;
  /** The plural resource name used in paths. */
  readonly plural: string;
  /** The kind of its objects. */
  readonly kind: string;
  /** True when its objects live in namespaces. */
  readonly namespaced: boolean;
}

/** The six resources the Kubernetes source watches. */
export const KUBERNETES_SOURCE_RESOURCES: readonly KubeResource[] = Object.freeze([
  { group: "", version: "v1", plural: "namespaces", kind: "Namespace", namespaced: false },
  { group: "", version: "v1", plural: "services", kind: "Service", namespaced: true },
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
    group: "multicluster.x-k8s.io",
    version: "v1alpha1",
    plural: "serviceexports",
    kind: "ServiceExport",
    namespaced: true,
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

/** The client-node module, loaded on start. */
type ClientModule = typeof import("@kubernetes/client-node");

/** What a kind's watch tells the source about. */
interface WatchHooks {
  /** False once the source stopped or replaced this informer. */
  active(): boolean;
  /** The informer applied a list (or resumes a watch): the kind has data. */
  listed(): void;
  /** A watch request was answered with 200. */
  connected(): void;
  /** An ERROR event arrived on the stream (with code 410, the informer re-lists). */
  errorEvent(code: unknown): void;
  /** Fixes up an object as received (fills apiVersion and kind, drops managedFields). */
  adopt(object: unknown): unknown;
  /** The delays between watches that end at once (reset by one that lasts). */
  readonly quickEnds: Backoff;
  /** Waits `ms`, or less when the source stops. */
  sleep(ms: number): Promise<void>;
}

/** How long a watch must last not to count as ending "at once". */
const SHORT_WATCH_MS = 1_000;

/**
 * Defines the Watch the informers use: client-node's, plus bookmarks, a
 * watch timeout, a client-side deadline, backoff between watches that end
 * at once, and the hooks above.
 */
function defineHookedWatch(client: ClientModule, timeoutSeconds: number) {
  return class HookedWatch extends client.Watch {
    private endedAtOnce = false;

    /** Creates a watch for one informer. */
    constructor(
      config: KubeConfig,
      private readonly hooks: WatchHooks,
    ) {
      super(config);
    }

    /** Starts a watch request like client-node's, with the additions above. */
    override async watch(
      path: string,
      queryParams: Record<string, string | number | boolean | undefined>,
      callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
      done: (err: unknown) => void,
    ): Promise<AbortController> {
      const hooks = this.hooks;
      if (hooks.active()) hooks.listed();
      if (this.endedAtOnce) await hooks.sleep(hooks.quickEnds.next());
      else hooks.quickEnds.reset();
      if (!hooks.active()) {
        done(null);
        return new AbortController();
      }
      const startedAt = Date.now();
      let ended = false;
      let deadline: NodeJS.Timeout | undefined;
      const onDone = (err: unknown) => {
        if (ended) return;
        ended = true;
        clearTimeout(deadline);
        // Failures have their own backoff (the source restarts the informer).
        this.endedAtOnce = err === null && Date.now() - startedAt < SHORT_WATCH_MS;
        done(err);
      };
      const onEvent = (phase: string, object: unknown, raw?: unknown) => {
        if (!hooks.active()) return;
        if (phase === "ERROR") hooks.errorEvent((object as { code?: unknown } | undefined)?.code);
        callback(
          phase,
          phase === "ERROR" || phase === "BOOKMARK" ? object : hooks.adopt(object),
          raw,
        );
      };
      const params = { ...queryParams, allowWatchBookmarks: true, timeoutSeconds };
      const controller = await super.watch(path, params, onEvent, onDone);
      if (!hooks.active()) controller.abort();
      else if (!ended) {
        hooks.connected();
        deadline = setTimeout(() => controller.abort(), (timeoutSeconds + 30) * 1_000);
      }
      return controller;
    }
  };
}

/** What the source keeps per resource. */
interface KindState {
  readonly resource: KubeResource;
  readonly apiVersion: string;
  /** The list and watch path. */
  readonly path: string;
  /** The field selector (the Namespace kind, when watching one namespace). */
  readonly fieldSelector: string | undefined;
  /** `kubernetes:PATH`, where problems are said to be. */
  readonly where: string;
  informer: ListWatch<KubernetesObject> | undefined;
  /** Bumped when the informer is replaced, so that a replaced one's callbacks are ignored. */
  generation: number;
  /** Listed at least once (or found missing): counts towards `synced`. */
  listed: boolean;
  /** The server does not serve the resource (404): treated as empty. */
  missing: boolean;
  /** The retry delays after failures in a row. */
  readonly backoff: Backoff;
  problem: SourceProblem | undefined;
  retryTimer: NodeJS.Timeout | undefined;
}

/** The API path of a resource, in one namespace or all. */
function resourcePath(resource: KubeResource, namespace: string | undefined): string {
  const base =
    resource.group === ""
      ? `/api/${resource.version}`
      : `/apis/${resource.group}/${resource.version}`;
  const scoped = resource.namespaced && namespace !== undefined;
  return `${base}/${scoped ? `namespaces/${encodeURIComponent(namespace)}/` : ""}${resource.plural}`;
}

/** The HTTP status of an error from a list or a watch, when it has one. */
function statusCodeOf(error: unknown): number | undefined {
  const candidate = error as { statusCode?: unknown; code?: unknown } | undefined;
  if (typeof candidate?.statusCode === "number") return candidate.statusCode;
  return typeof candidate?.code === "number" ? candidate.code : undefined;
}

/** A readable sentence from any error. */
function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Loads the client configuration the options ask for; throws a clear error when there is none. */
function loadKubeConfig(client: ClientModule, path: string | undefined): KubeConfig {
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

  const kinds: KindState[] = KUBERNETES_SOURCE_RESOURCES.map((resource) => {
    const path =
      resource.namespaced || namespace === undefined
        ? resourcePath(resource, namespace)
        : resourcePath(resource, undefined);
    return {
      resource,
      apiVersion:
        resource.group === "" ? resource.version : `${resource.group}/${resource.version}`,
      path,
      fieldSelector:
        !resource.namespaced && namespace !== undefined ? `metadata.name=${namespace}` : undefined,
      where: `kubernetes:${path}`,
      informer: undefined,
      generation: 0,
      listed: false,
      missing: false,
      backoff: createBackoff({ initialMs: initialDelayMs, maxMs: maxDelayMs }),
      problem: undefined,
      retryTimer: undefined,
    };
  });
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

  /** Sets the object fields client-node and the server leave out, and drops managedFields. */
  const adopt = (kind: KindState, object: unknown): KubernetesObject => {
    const target = object as KubernetesObject & { metadata?: { managedFields?: unknown } };
    if (target.metadata !== undefined) delete target.metadata.managedFields;
    if (target.apiVersion !== undefined && target.kind !== undefined) return target;
    return { apiVersion: kind.apiVersion, kind: kind.resource.kind, ...target };
  };

  /** Lists a kind as plain JSON (the informer's list function). */
  const listKind = async (kind: KindState, config: KubeConfig) => {
    const controller = new AbortController();
    listAborts.add(controller);
    try {
      const query = { fieldSelector: kind.fieldSelector };
      const body = (await kubeGetJson(config, kind.path, query, controller.signal)) as {
        metadata?: { resourceVersion?: string };
        items?: unknown;
      };
      if (!Array.isArray(body?.items)) {
        throw new KubeApiError(`GET ${kind.path}: the answer has no items list`);
      }
      logger.debug({ resource: kind.where, items: body.items.length }, "listed");
      return {
        ...body,
        items: body.items.map((item) => adopt(kind, item)),
      } as KubernetesListObject<KubernetesObject>;
    } finally {
      listAborts.delete(controller);
    }
  };

  const scheduleRetry = (kind: KindState, delayMs: number, fresh: boolean) => {
    if (kind.retryTimer !== undefined) clearTimeout(kind.retryTimer);
    kind.retryTimer = setTimeout(() => {
      kind.retryTimer = undefined;
      if (stopped) return;
      if (fresh || kind.informer === undefined) startInformer(kind);
      else kind.informer.start().catch((error: unknown) => onError(kind, kind.generation, error));
    }, delayMs);
  };

  /** Handles the informer's `error` event, after which it has stopped. */
  const onError = (kind: KindState, generation: number, error: unknown) => {
    if (stopped || generation !== kind.generation) return;
    if (statusCodeOf(error) === 404) {
      if (!kind.missing) {
        logger.warn(
          { resource: kind.where },
          `the API server does not serve ${kind.resource.plural}; treating it as empty`,
        );
      }
      kind.missing = true;
      kind.listed = true;
      kind.backoff.reset();
      kind.problem = {
        where: kind.where,
        message:
          `the API server does not serve ${kind.resource.plural} (${kind.apiVersion}); ` +
          `is its CustomResourceDefinition installed? Treated as empty and tried again ` +
          `every ${missingRetryMs} ms`,
      };
      const old = kind.informer;
      kind.informer = undefined;
      kind.generation++;
      old?.stop().catch(() => {});
      scheduleRetry(kind, missingRetryMs, true);
      checkSynced();
      scheduleChange();
      return;
    }
    const delayMs = Math.round(kind.backoff.next());
    kind.problem = {
      where: kind.where,
      message: `listing or watching failed: ${messageOf(error)}`,
    };
    logger.warn(
      {
        resource: kind.where,
        attempt: kind.backoff.attempts,
        retryInMs: delayMs,
        err: messageOf(error),
      },
      "list or watch failed; retrying",
    );
    scheduleRetry(kind, delayMs, false);
  };

  let config: KubeConfig | undefined;
  let HookedWatch: ReturnType<typeof defineHookedWatch> | undefined;
  let client: ClientModule | undefined;

  /** Creates and starts a fresh informer for a kind (its cache starts empty). */
  const startInformer = (kind: KindState) => {
    if (config === undefined || HookedWatch === undefined || client === undefined) return;
    const kubeConfig = config;
    const generation = ++kind.generation;
    const active = () => !stopped && kind.generation === generation;
    const watch = new HookedWatch(kubeConfig, {
      active,
      listed() {
        kind.listed = true;
        if (kind.missing) {
          kind.missing = false;
          kind.problem = undefined;
          logger.info({ resource: kind.where }, "the API server serves the resource now");
          scheduleChange();
        }
        checkSynced();
      },
      connected() {
        kind.backoff.reset();
        if (kind.problem !== undefined) {
          kind.problem = undefined;
          logger.info({ resource: kind.where }, "watching again");
        }
      },
      errorEvent(code) {
        if (code === 410) logger.info({ resource: kind.where }, "watch expired (410); re-listing");
        else
          logger.warn({ resource: kind.where, code }, "ERROR event on the watch; watching again");
      },
      adopt: (object) => adopt(kind, object),
      quickEnds: createBackoff({ initialMs: initialDelayMs, maxMs: maxDelayMs }),
      sleep,
    });
    const informer = new client.ListWatch<KubernetesObject>(
      kind.path,
      watch,
      () => listKind(kind, kubeConfig),
      false,
      undefined,
      kind.fieldSelector,
    );
    const changed = () => {
      if (active()) scheduleChange();
    };
    informer.on("add", changed);
    informer.on("update", changed);
    informer.on("delete", changed);
    informer.on("error", (error) => onError(kind, generation, error));
    kind.informer = informer;
    informer.start().catch((error: unknown) => onError(kind, generation, error));
  };

  const launch = async () => {
    const loaded = await import("@kubernetes/client-node");
    const kubeConfig = options.kubeConfig ?? loadKubeConfig(loaded, options.kubeconfig);
    if (kubeConfig.getCurrentCluster() === null) {
      throw new Error("the Kubernetes configuration has no current cluster");
    }
    if (stopped) return;
    client = loaded;
    config = kubeConfig;
    HookedWatch = defineHookedWatch(loaded, watchTimeoutSeconds);
    logger.info(
      { server: kubeConfig.getCurrentCluster()?.server, namespace: namespace ?? "(all)" },
      "starting informers",
    );
    for (const kind of kinds) startInformer(kind);
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
