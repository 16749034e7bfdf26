/**
 * The agent's publication of route tables: nothing until the agent is
 * ready ({@link computeReady}; it stays ready), then each table whose
 * content changed ({@link RouteTableFeed}) goes to the `--out` writer (as
 * JSON, only made when there is one), the listeners and the iterators
 * ({@link TableBroadcast}).
 */
import type { RouteTable, RouteTableInputs } from "../../services/common/route-merge.js";
import type { Logger } from "../../services/runtime/logger.js";
import { computeReady, createRouteTableFeed, type ReadinessInputs } from "./route-table-feed.js";
import { createTableBroadcast, type TableBroadcast } from "./table-broadcast.js";

/** Options of {@link createTablePublisher}. */
export interface TablePublisherOptions {
  /** Logger. */
  readonly logger: Logger;
  /** What readiness is decided on; read at each publish until ready. */
  readiness(): ReadinessInputs;
  /** What the table is merged from; read at each publish once ready. */
  inputs(): RouteTableInputs;
  /** Receives the JSON of each new table (the `--out` file); undefined: no JSON is made. */
  readonly write: ((json: string) => void) | undefined;
  /** True once the owner is stopping (iterators end). */
  closed(): boolean;
}

/** The publication; see the module comment. */
export interface TablePublisher extends Pick<TableBroadcast, "onUpdate" | "updates" | "close"> {
  /** The current table; undefined until ready. */
  readonly table: RouteTable | undefined;
  /** True once ready (it stays true). */
  readonly ready: boolean;
  /** The current table as JSON, made on first use after each change. */
  json(): string | undefined;
  /** Becomes ready when it can, then publishes the table when its content changed. */
  publish(): void;
  /** Resolves once ready. */
  whenReady(): Promise<void>;
}

/** Creates a publisher; nothing is published until `publish()`. */
export function createTablePublisher(options: TablePublisherOptions): TablePublisher {
  const { logger } = options;
  const feed = createRouteTableFeed();
  const broadcast = createTableBroadcast({
    logger,
    current: () => feed.table,
    closed: options.closed,
  });
  const readyWaiters: (() => void)[] = [];
  let ready = false;

  return {
    get table() {
      return feed.table;
    },
    get ready() {
      return ready;
    },
    json: () => feed.json(),
    publish() {
      if (!ready) {
        const inputs = options.readiness();
        if (!computeReady(inputs)) return;
        ready = true;
        logger.info({ fromCache: inputs.cacheLoaded }, "ready: serving a route table");
        for (const resolve of readyWaiters.splice(0)) resolve();
      }
      const next = feed.update(options.inputs());
      if (next === undefined) return;
      const local = next.services.filter((s) => s.source === "local").length;
      logger.info({ services: next.services.length, local }, "route table updated");
      options.write?.(feed.json() as string);
      broadcast.publish(next);
    },
    whenReady() {
      if (ready) return Promise.resolve();
      return new Promise((resolve) => readyWaiters.push(resolve));
    },
    onUpdate: broadcast.onUpdate,
    updates: broadcast.updates,
    close: broadcast.close,
  };
}
