/**
 * The agent's Prometheus metrics, in a registry of its own. Names mirror the
 * OpenTelemetry names `aether.config.*` (dots become underscores); the
 * agent-specific ones are `aether_config_agent_*`. Gauges that describe the
 * current state are computed when scraped, so they are never stale.
 */

import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { parseVersion } from "../../services/common/projection-version.js";
import type { RouteTable } from "../../services/common/route-merge.js";
import {
  TRUST_FAILURE_REASONS,
  type TrustFailureReason,
} from "../../services/runtime/tls/registrar-call-failure.js";
import {
  AGENT_REJECTION_REASONS,
  type AgentRejectionReason,
} from "./follower/received-projection.js";
import { CACHE_ERROR_REASONS, type CacheErrorReason } from "./last-known-cache.js";
import type { StatusReportResult } from "./report/status-reporter.js";
import { countByReason, unresolvedRefs } from "./unresolved-refs.js";

/** The follower's current way of getting config. */
export type FollowMode = "watch" | "poll";

/** Which operation an import error belongs to. */
export type ImportOperation = "watch" | "poll";

/** The WatchConfig event types, as metric labels. */
export const STREAM_EVENT_TYPES = [
  "snapshot",
  "synced",
  "upsert",
  "delete",
  "keepalive",
  "unknown",
] as const;

/** A WatchConfig event type label. */
export type StreamEventType = (typeof STREAM_EVENT_TYPES)[number];

/** What the metrics read when scraped. */
export interface AgentMetricsView {
  /** The current route table, or undefined before the first one. */
  table(): RouteTable | undefined;
  /** The number of services with a trusted imported winner in the dependency set. */
  importedServices(): number;
  /** The dependency set's size. */
  dependencies(): number;
  /** The ignored entries of the dependency file. */
  dependencyProblems(): number;
  /** The routes the projector rejected from the local source. */
  localRejections(): number;
  /** The revision the imported state is consistent with. */
  revision(): bigint;
  /** True once a cache or a first complete state is loaded. */
  ready(): boolean;
  /** The follower's mode. */
  mode(): FollowMode;
  /** Whether the registrar's stream says it cannot reach its store (it serves the view it kept). */
  registrarStoreUnavailable(): boolean;
  /** The imported projections held although the registrar's state lacks them, by origin. */
  heldDeletes(): ReadonlyMap<string, number>;
  /** The origins' public keys in force (`--origin-keys`); 0 without the flag. */
  originKeys(): number;
  /** The current time in milliseconds since the epoch. */
  now(): number;
}

/** The metrics the agent updates as it works. */
export interface AgentMetrics {
  /** The registry `/metrics` serves. */
  readonly registry: Registry;
  /** Counts a failed stream or poll. */
  countImportError(operation: ImportOperation): void;
  /** Counts a received projection the agent refused, by reason. */
  countRejection(reason: AgentRejectionReason): void;
  /** Observes the time from a projection's export stamp to its application, in seconds. */
  observePropagationLag(seconds: number): void;
  /**
   * Observes the agent's own share of a change's propagation, in seconds:
   * from the first WatchConfig change event received since the last applied
   * update to the route table that applies it.
   */
  observeApplyDelay(seconds: number): void;
  /** Counts a stream that ended or failed and is being re-established. */
  countReconnect(): void;
  /** Counts one received WatchConfig event. */
  countStreamEvent(type: StreamEventType): void;
  /** Counts message bytes (protobuf encoding) received from the registrar, by RPC method. */
  countReceivedBytes(method: string, bytes: number): void;
  /** Counts a finished poll (a whole paginated listing), by result. */
  countPoll(result: "ok" | "error"): void;
  /** Counts a cache file that was not used, or a failed save, by reason. */
  countCacheError(reason: CacheErrorReason): void;
  /** Counts a route table written to `--out`, or a failed write. */
  countOutputWrite(result: "ok" | "error"): void;
  /** Counts `count` applied deletes of `origin`'s imported projections. */
  countDeletes(origin: string, count: number): void;
  /** Counts a call to the registrar that failed on trust (TLS or authorization), by reason. */
  countTrustFailure(reason: TrustFailureReason): void;
  /**
   * Counts a re-read of `--origin-keys`: its keys used, other key ids than
   * before (`ok`), or refused and the old ones kept (once per refused content).
   */
  countOriginKeysReload(result: "ok" | "refused"): void;
  /** Counts a status report to the registrar (`ReportAppliedConfig`), by result. */
  countStatusReport(result: StatusReportResult): void;
}

/** Options of {@link createAgentMetrics}. */
export interface AgentMetricsOptions {
  /** What the scrape-time gauges read. */
  readonly view: AgentMetricsView;
  /** Whether to include Node's process metrics (default true). */
  readonly processMetrics?: boolean;
}

/**
 * Returns how many seconds before `nowMs` (milliseconds since the epoch) a
 * projection version (its RFC 3339 export stamp) is, or undefined when the
 * version is not a timestamp.
 */
export function versionAgeSeconds(version: string, nowMs: number): number | undefined {
  const nanos = parseVersion(version);
  if (nanos === undefined) return undefined;
  return (nowMs - Number(nanos / 1_000_000n)) / 1000;
}

/**
 * Registers the gauges that read the agent's state when scraped (the view),
 * rather than being set as things happen.
 */
function registerStateGauges(registry: Registry, view: AgentMetricsOptions["view"]): void {
  const registers = [registry];
  new Gauge({
    name: "aether_config_import_services",
    help: "Services of the dependency set with a trusted imported projection (the import policy's winner).",
    registers,
    collect() {
      this.set(view.importedServices());
    },
  });
  new Gauge({
    name: "aether_config_agent_route_table_services",
    help: "Services in the route table, by the source that decided them.",
    labelNames: ["source"],
    registers,
    collect() {
      const services = view.table()?.services ?? [];
      this.set({ source: "local" }, services.filter((s) => s.source === "local").length);
      this.set({ source: "imported" }, services.filter((s) => s.source === "imported").length);
    },
  });
  new Gauge({
    name: "aether_config_import_age_max_seconds",
    help: "Now minus the export stamp (version) of the oldest imported projection in the route table; 0 when there is none.",
    registers,
    collect() {
      const now = view.now();
      const ages = (view.table()?.services ?? [])
        .filter((s) => s.source === "imported")
        .map((s) => versionAgeSeconds(s.version, now))
        .filter((age) => age !== undefined);
      this.set(ages.length === 0 ? 0 : Math.max(0, ...ages));
    },
  });
  new Gauge({
    name: "aether_config_agent_mode",
    help: "1 for the way the agent currently gets config: watch (the stream) or poll (ListAllConfig).",
    labelNames: ["mode"],
    registers,
    collect() {
      const mode = view.mode();
      this.set({ mode: "watch" }, mode === "watch" ? 1 : 0);
      this.set({ mode: "poll" }, mode === "poll" ? 1 : 0);
    },
  });
  new Gauge({
    name: "aether_config_agent_registrar_store_unavailable",
    help: "1 while the registrar's stream says the registrar cannot reach its store and serves the view it last synced.",
    registers,
    collect() {
      this.set(view.registrarStoreUnavailable() ? 1 : 0);
    },
  });
  new Gauge({
    name: "aether_config_agent_ready",
    help: "1 once a cache or a first complete state is loaded.",
    registers,
    collect() {
      this.set(view.ready() ? 1 : 0);
    },
  });
  new Gauge({
    name: "aether_config_agent_revision",
    help: "The registrar store revision the imported state is consistent with.",
    registers,
    collect() {
      this.set(Number(view.revision()));
    },
  });
  new Gauge({
    name: "aether_config_agent_dependencies",
    help: "Services in the dependency set.",
    registers,
    collect() {
      this.set(view.dependencies());
    },
  });
  new Gauge({
    name: "aether_config_agent_dependency_problems",
    help: "Entries of the dependency file that are ignored (not namespace/name), or 1 when it cannot be read.",
    registers,
    collect() {
      this.set(view.dependencyProblems());
    },
  });
  new Gauge({
    name: "aether_config_import_held_deletes",
    help: "Imported projections kept although the registrar's state lacks them (too many vanished at once), by origin.",
    labelNames: ["origin"],
    registers,
    collect() {
      this.reset();
      for (const [origin, count] of view.heldDeletes()) this.set({ origin }, count);
    },
  });
  new Gauge({
    name: "aether_config_agent_origin_keys",
    help: "The origins' public keys in force (--origin-keys), that imported projections' signatures are verified with.",
    registers,
    collect() {
      this.set(view.originKeys());
    },
  });
  new Gauge({
    name: "aether_config_agent_unresolved_extension_refs",
    help: "ExtensionRef filters of the route table naming an HTTPFilter this cluster has no valid one of (requests they handle get 500), by reason: not_found or invalid_filter.",
    labelNames: ["reason"],
    registers,
    collect() {
      this.reset();
      for (const [reason, count] of countByReason(unresolvedRefs(view.table()))) {
        this.set({ reason }, count);
      }
    },
  });
  new Gauge({
    name: "aether_config_agent_local_rejections",
    help: "Local routes the projector currently rejects.",
    registers,
    collect() {
      this.set(view.localRejections());
    },
  });
}

/** Creates the agent's metrics in a fresh registry. */
export function createAgentMetrics(options: AgentMetricsOptions): AgentMetrics {
  const { view } = options;
  const registry = new Registry();
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  const registers = [registry];

  registerStateGauges(registry, view);

  /** A counter with one label, every value of which is exported from the start (at 0). */
  const labelled = <L extends string>(
    name: string,
    help: string,
    label: L,
    values: readonly string[],
  ) => {
    const counter = new Counter<L>({ name, help, labelNames: [label], registers });
    for (const value of values) counter.inc({ [label]: value } as Record<L, string>, 0);
    return counter;
  };
  const importErrors = labelled(
    "aether_config_import_errors_total",
    "Failed WatchConfig streams and ListAllConfig polls.",
    "operation",
    ["watch", "poll"],
  );
  const rejections = labelled(
    "aether_config_import_rejections_total",
    "Received projections the agent refused and never applied, by reason.",
    "reason",
    AGENT_REJECTION_REASONS,
  );
  const deletes = new Counter({
    name: "aether_config_import_deletes_total",
    help: "Deletes of imported projections the agent applied (not services that left the dependency set), by origin.",
    labelNames: ["origin"],
    registers,
  });
  const lag = new Histogram({
    name: "aether_config_propagation_lag_seconds",
    help: "From a projection's export stamp (version) to the agent applying it, for changes received after the first state.",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
    registers,
  });
  const applyDelay = new Histogram({
    name: "aether_config_agent_apply_seconds",
    help: "From a WatchConfig change event received to the route table applying it published (the agent's share of propagation).",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers,
  });
  const reconnects = new Counter({
    name: "aether_config_stream_reconnects_total",
    help: "WatchConfig streams that ended or failed and were re-established.",
    registers,
  });
  const streamEvents = labelled(
    "aether_config_agent_stream_events_total",
    "WatchConfig events received, by type.",
    "type",
    STREAM_EVENT_TYPES,
  );
  const receivedBytes = labelled(
    "aether_config_agent_received_bytes_total",
    "Response message bytes (protobuf encoding, without framing) received from the registrar, by RPC method.",
    "method",
    ["WatchConfig", "ListAllConfig"],
  );
  const polls = labelled(
    "aether_config_agent_polls_total",
    "ListAllConfig polls (whole paginated listings), by result.",
    "result",
    ["ok", "error"],
  );
  const cacheErrors = labelled(
    "aether_config_agent_cache_errors_total",
    "Cache files that were not used (corrupt, truncated, other version) and failed saves, by reason.",
    "reason",
    CACHE_ERROR_REASONS,
  );
  const outputWrites = labelled(
    "aether_config_agent_output_writes_total",
    "Route tables written to --out, by result.",
    "result",
    ["ok", "error"],
  );

  const trustFailures = labelled(
    "aether_config_agent_registrar_trust_failures_total",
    "Calls to the registrar that failed on trust: its certificate refused by the agent (SVID reasons), the agent's refused by the registrar (refused_by_registrar), another TLS handshake failure, or permission_denied.",
    "reason",
    TRUST_FAILURE_REASONS,
  );

  const keysReloads = labelled(
    "aether_config_agent_origin_keys_reloads_total",
    "Re-reads of --origin-keys after it changed: its keys used, other key ids than before (ok), or refused (unreadable, a bad entry; once per refused content) with the keys in force kept.",
    "result",
    ["ok", "refused"],
  );

  const statusReports = labelled(
    "aether_config_agent_status_reports_total",
    "Reports of what the agent applied and refused sent to the registrar (ReportAppliedConfig), by result: ok, error (retried with backoff), unimplemented (an older registrar; asked again every 10 minutes).",
    "result",
    ["ok", "error", "unimplemented"],
  );

  return {
    registry,
    countStatusReport: (result) => statusReports.inc({ result }),
    countOriginKeysReload: (result) => keysReloads.inc({ result }),
    countTrustFailure: (reason) => trustFailures.inc({ reason }),
    countImportError: (operation) => importErrors.inc({ operation }),
    countRejection: (reason) => rejections.inc({ reason }),
    observePropagationLag: (seconds) => lag.observe(Math.max(0, seconds)),
    observeApplyDelay: (seconds) => applyDelay.observe(Math.max(0, seconds)),
    countReconnect: () => reconnects.inc(),
    countStreamEvent: (type) => streamEvents.inc({ type }),
    countReceivedBytes: (method, bytes) => receivedBytes.inc({ method }, bytes),
    countPoll: (result) => polls.inc({ result }),
    countCacheError: (reason) => cacheErrors.inc({ reason }),
    countOutputWrite: (result) => outputWrites.inc({ result }),
    countDeletes: (origin, count) => deletes.inc({ origin }, count),
  };
}
