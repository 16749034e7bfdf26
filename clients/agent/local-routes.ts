/**
 * The agent's local (class-2) routes: the cluster's own HTTPRoutes and
 * GRPCRoutes for the services its workloads call, read from an object
 * source (a directory of manifests or the Kubernetes API) and projected with
 * the SAME projector the hub's export controller uses, with `exportAll`
 * (local routes need no ServiceExport). They never travel; the route table
 * lets them win over imported config for their services. The source's
 * HTTPFilters are this cluster's own: every HTTPFilter ExtensionRef of a
 * local route is resolved against them here, and the route table resolves
 * the imported routes' references against them too
 * (`services/common/extension-ref-resolve.ts`).
 */
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import {
  type LocalHttpFilters,
  readLocalHttpFilters,
  resolveExtensionRefs,
} from "../../services/common/extension-ref-resolve.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { DEFAULT_PROJECTION_LIMITS } from "../../services/common/projection-limits.js";
import {
  compareRouteProblems,
  projectServices,
  type RouteRejection,
} from "../../services/common/projector.js";
import { limitProjection } from "../../services/common/projector-limits.js";
import { createSilentLogger, type Logger } from "../../services/runtime/logger.js";
import { createRateLimitedLog } from "../../services/runtime/rate-limited-log.js";
import type { ObjectSource } from "../../services/sources/object-source.js";

/** Projected local routes. */
export interface LocalProjection {
  /** One projection per service that has at least one local route, by service. */
  readonly projections: ReadonlyMap<string, ServiceConfigProjection>;
  /** The local routes the projector rejected. */
  readonly rejections: readonly RouteRejection[];
  /** The cluster's own HTTPFilters, for ExtensionRef filters (see `extension-ref-resolve.ts`). */
  readonly filters: LocalHttpFilters;
}

/**
 * Projects local objects: every Service a route attaches to is in scope
 * (`exportAll`); services whose projection has no routes are left out (a
 * ServiceExport alone is not local routing config), but not the mesh
 * record (`@mesh`, the local MeshConfig, when the projector makes one). Each projection is held
 * to the projection limits as the exporter holds its own (routes that do
 * not fit are `too_large` rejections), then has its HTTPFilter ExtensionRefs
 * resolved against the objects' own HTTPFilters. Pure.
 */
export function projectLocalRoutes(objects: readonly KubeObject[]): LocalProjection {
  const output = projectServices(objects, { exportAll: true });
  const filters = readLocalHttpFilters(objects);
  const projections = new Map<string, ServiceConfigProjection>();
  const tooLarge: RouteRejection[] = [];
  for (const projection of output.projections) {
    // A mesh record (the local MeshConfig) has no routes: it is local config all the same.
    if (projection.routes.length === 0 && projection.meshConfig === undefined) continue;
    const limited = limitProjection(projection, DEFAULT_PROJECTION_LIMITS);
    for (const rejection of limited.rejections) tooLarge.push(rejection);
    projections.set(
      projection.service,
      resolveExtensionRefs(limited.projection, filters).projection,
    );
  }
  const rejections =
    tooLarge.length === 0
      ? output.rejections
      : [...output.rejections, ...tooLarge].sort(compareRouteProblems);
  return { projections, rejections, filters };
}

/** Options of {@link createLocalRoutes}. */
export interface LocalRoutesOptions {
  /** Where the local objects come from; started and stopped by the local routes. */
  readonly source: ObjectSource;
  /** Logger; silent by default. */
  readonly logger?: Logger;
}

/** Local routes following their source. */
export interface LocalRoutes extends LocalProjection {
  /** The source's name, for logs. */
  readonly name: string;
  /** True once the source's first snapshot was projected. */
  readonly synced: boolean;
  /** Why the source could not be read at all, if it failed. */
  readonly failure: Error | undefined;
  /**
   * Starts the source; resolves once its first snapshot was projected, or
   * once it failed (see {@link LocalRoutes.failure}). Never rejects.
   */
  start(): Promise<void>;
  /** Stops the source. */
  stop(): Promise<void>;
  /** Registers a listener called after every re-projection; returns its remover. */
  onChange(listener: () => void): () => void;
}

function describeRejection(r: RouteRejection): string {
  return `${r.route.kind} ${r.route.namespace}/${r.route.name}: ${r.reason}: ${r.message}`;
}

/** Creates local routes over a source; nothing is read until `start()`. */
export function createLocalRoutes(options: LocalRoutesOptions): LocalRoutes {
  const { source } = options;
  const logger = (options.logger ?? createSilentLogger()).child({ localSource: source.name });
  const listeners = new Set<() => void>();
  const rejectionLog = createRateLimitedLog(logger);
  let current: LocalProjection = { projections: new Map(), rejections: [], filters: new Map() };
  let synced = false;
  let failure: Error | undefined;
  let unsubscribe: (() => void) | undefined;

  const reproject = () => {
    const previous = new Set(current.rejections.map(describeRejection));
    current = projectLocalRoutes(source.snapshot());
    for (const rejection of current.rejections) {
      const text = describeRejection(rejection);
      if (previous.has(text)) continue;
      const fields = { reason: rejection.reason };
      rejectionLog.warn("local-route-rejection", fields, `local route rejected: ${text}`);
    }
    synced = true;
    for (const listener of [...listeners]) listener();
  };

  return {
    name: source.name,
    get projections() {
      return current.projections;
    },
    get rejections() {
      return current.rejections;
    },
    get filters() {
      return current.filters;
    },
    get synced() {
      return synced;
    },
    get failure() {
      return failure;
    },
    async start() {
      if (unsubscribe !== undefined) return;
      unsubscribe = source.onChange(() => {
        if (synced) reproject();
      });
      source.start();
      try {
        await source.whenSynced();
        reproject();
        logger.info({ services: current.projections.size }, "local routes read");
      } catch (error) {
        failure = error instanceof Error ? error : new Error(String(error));
        logger.error({ err: failure }, "cannot read the local routes; keeping the cached ones");
      }
    },
    async stop() {
      unsubscribe?.();
      listeners.clear();
      await source.stop();
      rejectionLog.flush();
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
