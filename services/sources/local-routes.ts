/**
 * A cluster's local (class-2) routes following their object source (a
 * directory of manifests or the Kubernetes API), re-projected on every
 * change with `projectLocalRoutes` (`services/common/local-projection.ts`).
 * They never travel: the agent's route table lets them win over imported
 * config for their services, and the registrar publishes their digests.
 */
import { type LocalProjection, projectLocalRoutes } from "../common/local-projection.js";
import type { RouteRejection } from "../common/projector.js";
import { createSilentLogger, type Logger } from "../runtime/logger.js";
import { createRateLimitedLog } from "../runtime/rate-limited-log.js";
import type { ObjectSource } from "./object-source.js";

export { type LocalProjection, projectLocalRoutes } from "../common/local-projection.js";

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
