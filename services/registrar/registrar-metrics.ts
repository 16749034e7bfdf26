/**
 * The registrar's Prometheus metrics. Names mirror the OpenTelemetry names
 * `aether.config.*` (dots become underscores). Gauges that describe the store
 * and the cache are computed when scraped, so they are never stale.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { IMPORT_REJECTION_REASONS, type ImportRejectionReason } from "../common/import-policy.js";
import type { ConfigCache } from "./cache/config-cache.js";
import { createExportMetrics, type ExportMetrics } from "./export/export-metrics.js";
import { REPORT_RESULTS, type ReportResult } from "./fleet/agent-table.js";
import type { ConfigStore } from "./store/config-store.js";

/** What became of a store read a list request asked for (see `service/store-reads.ts`). */
export type ListReadOutcome = "read" | "coalesced" | "refused";

/** Every {@link ListReadOutcome}, each exported from the start (at 0). */
export const LIST_READ_OUTCOMES: readonly ListReadOutcome[] = ["read", "coalesced", "refused"];

/** The metrics a registrar updates as it works. */
export interface RegistrarMetrics {
  /** The registry `/metrics` serves. */
  readonly registry: Registry;
  /** Counts a projection the import policy rejected, by reason. */
  countRejection(reason: ImportRejectionReason): void;
  /** Counts one finished RPC by method and status code name. */
  countRpc(method: string, code: string): void;
  /**
   * Counts a call whose request never reached its RPC: a message that does
   * not decode, or a request answered before it was read.
   */
  countUndecoded(method: string): void;
  /** Adjusts the number of open WatchConfig streams. */
  addWatchStreams(delta: number): void;
  /**
   * Observes one live change's fan-out, in seconds: from the cache handing
   * it to the watch streams to the last of them writing it.
   */
  observeWatchFanout(seconds: number): void;
  /**
   * Counts a store read a list request asked for: `read` (made), `coalesced`
   * (joined an identical read in flight) or `refused` (too many running and
   * waiting).
   */
  countListRead(outcome: ListReadOutcome): void;
  /** Counts `count` applied deletes of `origin`'s imported projections. */
  countDeletes(origin: string, count: number): void;
  /** Counts an agent's `ReportAppliedConfig` by what became of it (see `fleet/agent-table.ts`). */
  countAgentReport(result: ReportResult): void;
  /** The export controller's metrics (registered even when it does not export). */
  readonly exportMetrics: ExportMetrics;
}

/** Options of {@link createRegistrarMetrics}. */
export interface RegistrarMetricsOptions {
  /** The store, for its decode counters. */
  readonly store: ConfigStore;
  /** The cache, for projection and conflict counts. */
  readonly cache: ConfigCache;
  /** Whether to include Node's process metrics (default true). */
  readonly processMetrics?: boolean;
  /** How many agents report to this replica (`fleet/agent-reports.ts`); default none. */
  readonly reportingAgents?: () => number;
}

/** Creates the registrar's metrics in a fresh registry. */
export function createRegistrarMetrics(options: RegistrarMetricsOptions): RegistrarMetrics {
  const { store, cache } = options;
  const registry = new Registry();
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });

  new Counter({
    name: "aether_config_store_decode_errors_total",
    help: "Store values skipped because they do not decode as a ServiceConfigProjection, or decode to the wrong shape for their key (@mesh or a service).",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(store.counters.decodeErrors);
    },
  });
  new Counter({
    name: "aether_config_store_invalid_keys_total",
    help: "Keys under the store prefix skipped because they are not projection keys.",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(store.counters.invalidKeys);
    },
  });
  new Counter({
    name: "aether_config_store_restamped_total",
    help: "Values whose claimed origin or service disagreed with their key and were re-stamped.",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(store.counters.restamped);
    },
  });
  new Gauge({
    name: "aether_config_store_up",
    help: "1 while the registrar is synced with the store, 0 otherwise.",
    registers: [registry],
    collect() {
      this.set(cache.state === "synced" ? 1 : 0);
    },
  });
  new Gauge({
    name: "aether_config_store_revision",
    help: "The store revision the registrar's cache is consistent with.",
    registers: [registry],
    collect() {
      this.set(cache.revision);
    },
  });
  new Gauge({
    name: "aether_config_import_services",
    help: "Services with an effective (trusted, winning) projection.",
    registers: [registry],
    collect() {
      this.set(cache.stats().effectiveServices);
    },
  });
  new Gauge({
    name: "aether_config_import_projections",
    help: "Stored projections of every origin.",
    registers: [registry],
    collect() {
      this.set(cache.stats().projections);
    },
  });
  new Gauge({
    name: "aether_config_import_conflicts",
    help: "Services exported by more than one trusted origin.",
    registers: [registry],
    collect() {
      this.set(cache.stats().conflicts);
    },
  });
  new Gauge({
    name: "aether_config_import_rejected",
    help: "Stored projections the import policy currently rejects, by reason.",
    labelNames: ["reason"],
    registers: [registry],
    collect() {
      const rejected = cache.stats().rejected;
      for (const reason of IMPORT_REJECTION_REASONS) {
        this.set({ reason }, rejected.get(reason) ?? 0);
      }
    },
  });
  const rejections = new Counter({
    name: "aether_config_import_rejections_total",
    help: "Projections the import policy rejected, by reason (counted once per stored value).",
    labelNames: ["reason"],
    registers: [registry],
  });
  for (const reason of IMPORT_REJECTION_REASONS) rejections.inc({ reason }, 0);
  const rpcs = new Counter({
    name: "aether_config_rpc_requests_total",
    help: "Finished ConfigService RPCs, by method and status code.",
    labelNames: ["method", "code"],
    registers: [registry],
  });
  const undecoded = new Counter({
    name: "aether_config_rpc_undecoded_requests_total",
    help: "Calls whose request never reached the RPC, by method: a message that does not decode (malformed), or a request answered before it was read.",
    labelNames: ["method"],
    registers: [registry],
  });
  const streams = new Gauge({
    name: "aether_config_watch_streams",
    help: "Open WatchConfig streams.",
    registers: [registry],
  });
  const fanout = new Histogram({
    name: "aether_config_watch_fanout_seconds",
    help: "From a live change's arrival in the cache (handed to the watch streams) to the last stream writing it.",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });

  const listReads = new Counter({
    name: "aether_config_list_store_reads_total",
    help: "Store reads list requests asked for, by outcome: read, coalesced (joined an identical read in flight) or refused (too many running and waiting).",
    labelNames: ["outcome"],
    registers: [registry],
  });
  for (const outcome of LIST_READ_OUTCOMES) listReads.inc({ outcome }, 0);

  const deletes = registerLossMetrics(registry, cache);
  const agentReports = registerAgentReportMetrics(registry, options.reportingAgents);
  const exportMetrics = createExportMetrics(registry);

  return {
    registry,
    exportMetrics,
    countRejection(reason) {
      rejections.inc({ reason });
    },
    countRpc(method, code) {
      rpcs.inc({ method, code });
    },
    countUndecoded(method) {
      undecoded.inc({ method });
    },
    addWatchStreams(delta) {
      streams.inc(delta);
    },
    observeWatchFanout(seconds) {
      fanout.observe(Math.max(0, seconds));
    },
    countListRead(outcome) {
      listReads.inc({ outcome });
    },
    countDeletes(origin, count) {
      deletes.inc({ origin }, count);
    },
    countAgentReport(result) {
      agentReports.inc({ result });
    },
  };
}

/**
 * Registers the metrics of loss in the import: applied deletes (a counter,
 * by origin: origins are few, one per cluster) and the deletes the cache
 * holds (a gauge, by origin, read when scraped). Rollbacks are never
 * applied: they are `rollback` rejections (see `version-marks.ts`).
 */
function registerLossMetrics(registry: Registry, cache: ConfigCache): Counter<"origin"> {
  const deletes = new Counter({
    name: "aether_config_import_deletes_total",
    help: "Deletes of imported projections the registrar applied, by origin.",
    labelNames: ["origin"],
    registers: [registry],
  });
  new Gauge({
    name: "aether_config_import_held_deletes",
    help: "Deletes of imported projections held (not applied, still served) because too many of an origin's projections vanished at once, by origin.",
    labelNames: ["origin"],
    registers: [registry],
    collect() {
      this.reset();
      for (const hold of cache.holds()) this.set({ origin: hold.origin }, hold.services.size);
    },
  });
  return deletes;
}

/**
 * Registers the metrics of the agents' reports: each report by what became
 * of it (a counter, every result from the start) and the agents tracked (a
 * gauge, read when scraped).
 */
function registerAgentReportMetrics(
  registry: Registry,
  reportingAgents: (() => number) | undefined,
): Counter<"result"> {
  const reports = new Counter({
    name: "aether_config_agent_reports_total",
    help: "ReportAppliedConfig calls from agents, by result: accepted (a change), unchanged, stale_sequence (a late retry, ignored), invalid, over_limit (too many agents tracked).",
    labelNames: ["result"],
    registers: [registry],
  });
  for (const result of REPORT_RESULTS) reports.inc({ result }, 0);
  new Gauge({
    name: "aether_config_reporting_agents",
    help: "Agents that reported to this replica within three report intervals.",
    registers: [registry],
    collect() {
      this.set(reportingAgents?.() ?? 0);
    },
  });
  return reports;
}
