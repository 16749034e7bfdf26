/**
 * The fleet view's shell: GetFleetStatus and the fleet metrics, answered
 * from every cluster's published status (the `StatusFeed`) and this
 * registrar's current versions (`version-tracker.ts`, from the config
 * cache). The decisions are in `services/common/fleet-*.ts`; this file
 * checks the request, reads the inputs and maps failures to ConnectError
 * codes: INVALID_ARGUMENT for a bad request, UNAVAILABLE until the feed has
 * listed the store. The metrics' view is computed at most once per
 * `metricsCacheMs` (scrapes in between read the same numbers).
 *
 * Wiring (not done here): pass `view.fleetStatus` as `createConfigService`'s
 * `fleetStatus` option, and stop the view with the registrar.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { Registry } from "prom-client";
import type {
  GetFleetStatusRequest,
  GetFleetStatusResponse,
} from "../../../gen/aether/registry/v1/fleet_pb.js";
import { computeFleetView, fleetResponse } from "../../common/fleet-aggregate.js";
import type { FleetSummary } from "../../common/fleet-condition.js";
import { serviceMessage } from "../../common/fleet-messages.js";
import { type FleetMetrics, fleetMetrics } from "../../common/fleet-metrics-snapshot.js";
import { ALL_OF_THE_FLEET, checkFleetRequest } from "../../common/fleet-request.js";
import { fleetSummaryOf } from "../../common/fleet-summary.js";
import { invalid } from "../service/request-checks.js";
import type { StatusFeed } from "./fleet-inputs.js";
import { registerFleetMetrics } from "./fleet-metrics.js";
import { createVersionTracker, type TrackedCache } from "./version-tracker.js";

/** Options of {@link createFleetView}. */
export interface FleetViewOptions {
  /** Every cluster's published status. */
  readonly feed: StatusFeed;
  /** The config cache: the current versions, and whether this registrar is synced. */
  readonly cache: TrackedCache;
  /** The clock, in milliseconds since the epoch; default `Date.now`. */
  readonly clock?: () => number;
  /** Where the fleet gauges are registered (the registrar's metrics); optional. */
  readonly metrics?: { readonly registry: Registry };
  /** How long the metrics' view is reused, in milliseconds; default 1000. */
  readonly metricsCacheMs?: number;
}

/** The fleet view of one registrar. */
export interface FleetStatusView {
  /**
   * Answers GetFleetStatus. Throws a ConnectError: INVALID_ARGUMENT for a
   * bad request, UNAVAILABLE while the feed has not listed the store.
   */
  fleetStatus(request: GetFleetStatusRequest): GetFleetStatusResponse;
  /** The fleet metrics' numbers (reused for `metricsCacheMs`); undefined while the feed is not synced. */
  metrics(): FleetMetrics | undefined;
  /**
   * The fleet's summary of each of `services` some cluster reports or this
   * registrar has a current version of (the status writer's fleet condition);
   * empty while the feed is not synced (the condition then waits: Pending).
   */
  summaries(services: ReadonlySet<string>): ReadonlyMap<string, FleetSummary>;
  /** Calls `listener` after every change of the feed; returns the unsubscribe function. */
  onChange(listener: () => void): () => void;
  /** Stops following the cache and the feed; idempotent. */
  stop(): void;
}

/** Creates the fleet view over a feed and the config cache; registers its gauges when given `metrics`. */
export function createFleetView(options: FleetViewOptions): FleetStatusView {
  const { feed, cache } = options;
  const clock = options.clock ?? Date.now;
  const metricsCacheMs = options.metricsCacheMs ?? 1000;
  const tracker = createVersionTracker(cache);
  // Each feed change is a chance to resubscribe after the cache lost the store.
  const unfollow = feed.onChange(() => tracker.resume());
  let kept: { readonly atMs: number; readonly metrics: FleetMetrics } | undefined;

  const inputs = (nowMs: number) => ({
    replicas: feed.replicas(),
    nowMs,
    versions: tracker.versions(),
  });

  const view: FleetStatusView = {
    fleetStatus(request) {
      const check = checkFleetRequest(request);
      if (!check.ok) throw invalid(check.problem);
      if (!feed.synced) {
        throw new ConnectError(
          "the fleet status feed has not read every cluster's published status yet; retry shortly",
          Code.Unavailable,
        );
      }
      const nowMs = clock();
      const fleet = computeFleetView(inputs(nowMs), check.query);
      return fleetResponse(fleet, check.query.limit, nowMs, cache.state === "synced");
    },
    metrics() {
      if (!feed.synced) return undefined;
      const nowMs = clock();
      if (kept === undefined || nowMs - kept.atMs >= metricsCacheMs || nowMs < kept.atMs) {
        kept = {
          atMs: nowMs,
          metrics: fleetMetrics(computeFleetView(inputs(nowMs), ALL_OF_THE_FLEET)),
        };
      }
      return kept.metrics;
    },
    summaries(services) {
      if (!feed.synced || services.size === 0) return new Map();
      const nowMs = clock();
      const fleet = computeFleetView(inputs(nowMs), { ...ALL_OF_THE_FLEET, services });
      return new Map(
        fleet.services.map((s) => [s.service, fleetSummaryOf(serviceMessage(s, nowMs))]),
      );
    },
    onChange: (listener) => feed.onChange(listener),
    stop() {
      unfollow();
      tracker.stop();
    },
  };
  if (options.metrics !== undefined)
    registerFleetMetrics(options.metrics.registry, () => view.metrics());
  return view;
}
