/**
 * The fleet view's fallback for a registrar without GetFleetStatus (older
 * than the RPC): the projections every origin stored (ListAllConfig,
 * ALL_ORIGINS) and the registrar's status (GetConfigStatus: trusted origins,
 * import rejections) as an answer of the same shape, one column per origin:
 * the winning origin's cell in sync, an older one behind, a refused one
 * rejecting with its reason. No agent counts or drift (only the RPC knows
 * them). Pure.
 */
import { create } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { GetConfigStatusResponse } from "../../../../../gen/aether/registry/v1/config_service_pb.js";
import {
  FleetState,
  type GetFleetStatusResponse,
  GetFleetStatusResponseSchema,
} from "../../../../../gen/aether/registry/v1/fleet_pb.js";
import { parseVersion } from "../../../../../services/common/projection-version.js";
import { fleetStateOf } from "./fleet-format.js";

/** What the fallback reads of one stored projection. */
export interface StoredHeader {
  readonly service: string;
  readonly originCluster: string;
  readonly version: string;
}

const RANK = [FleetState.STALE, FleetState.REJECTING, FleetState.BEHIND, FleetState.IN_SYNC];
const worst = (states: readonly FleetState[]) =>
  states.reduce((a, b) => (RANK.indexOf(b) < RANK.indexOf(a) ? b : a), FleetState.IN_SYNC);
const nanos = (version: string) => parseVersion(version) ?? -1n;

/** The winner among `candidates`: the newest version, ties to the first origin by name. */
function winnerOf(candidates: readonly StoredHeader[]): StoredHeader | undefined {
  return [...candidates].sort((a, b) => {
    const d = nanos(b.version) - nanos(a.version);
    return d !== 0n ? (d > 0n ? 1 : -1) : a.originCluster.localeCompare(b.originCluster);
  })[0];
}

/** The services, one cell per origin that stores it, worst first then by name. */
function servicesOf(stored: readonly StoredHeader[], status: GetConfigStatusResponse) {
  const trusted = new Set(status.origins.filter((o) => o.trusted).map((o) => o.origin));
  const byService = new Map<string, StoredHeader[]>();
  for (const p of stored) byService.set(p.service, [...(byService.get(p.service) ?? []), p]);
  const services = [...byService].map(([service, headers]) => {
    const rejections = status.rejections.filter((r) => r.service === service);
    const refused = (h: StoredHeader) =>
      !trusted.has(h.originCluster) || rejections.some((r) => r.originCluster === h.originCluster);
    const winner = winnerOf(headers.filter((h) => !refused(h)));
    const clusters = headers.map((h) => {
      const importRejections = rejections
        .filter((r) => r.originCluster === h.originCluster)
        .map((r) => ({
          originCluster: r.originCluster,
          version: h.version,
          reason: r.reason,
          message: r.message,
        }));
      const state = refused(h)
        ? FleetState.REJECTING
        : h === winner
          ? FleetState.IN_SYNC
          : FleetState.BEHIND;
      const { originCluster, version } = h;
      return { cluster: originCluster, state, originCluster, version, importRejections };
    });
    const served = clusters.filter((c) => c.state !== FleetState.REJECTING);
    const times = served.map((c) => nanos(c.version)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const oldest = times[0] ?? nanos(winner?.version ?? "");
    const skewMs = winner === undefined ? 0 : Number((nanos(winner.version) - oldest) / 1_000_000n);
    return {
      ...{ service, originCluster: winner?.originCluster ?? "", version: winner?.version ?? "" },
      state: worst(clusters.map((c) => c.state)),
      clusters: clusters.sort((a, b) => a.cluster.localeCompare(b.cluster)),
      skewVersions: Math.min(16, new Set(served.map((c) => c.version)).size - 1),
      skew: durationFromMs(Math.max(0, skewMs)),
    };
  });
  return services.sort(
    (a, b) => RANK.indexOf(a.state) - RANK.indexOf(b.state) || a.service.localeCompare(b.service),
  );
}

/**
 * The origin-per-service answer of `stored` and `status` at `nowMs`, with
 * the request's cluster (origin) and state filters applied like the RPC's.
 */
export function originsAsFleet(
  stored: readonly StoredHeader[],
  status: GetConfigStatusResponse,
  nowMs: number,
  filters: { cluster: string; state: string } = { cluster: "", state: "" },
): GetFleetStatusResponse {
  const picked = stored.filter(
    (h) => filters.cluster === "" || h.originCluster === filters.cluster,
  );
  const services = servicesOf(picked, status).filter(
    (s) => filters.state === "" || fleetStateOf(filters.state as never) === s.state,
  );
  const origins = [
    ...new Set([...status.origins.map((o) => o.origin), ...picked.map((h) => h.originCluster)]),
  ]
    .filter((o) => filters.cluster === "" || o === filters.cluster)
    .sort();
  const count = (origin: string, state: FleetState) =>
    services.filter((s) => s.clusters.some((c) => c.cluster === origin && c.state === state))
      .length;
  return create(GetFleetStatusResponseSchema, {
    time: timestampFromMs(nowMs),
    clusters: origins.map((cluster) => ({
      cluster,
      servicesInSync: count(cluster, FleetState.IN_SYNC),
      servicesBehind: count(cluster, FleetState.BEHIND),
      servicesRejecting: count(cluster, FleetState.REJECTING),
    })),
    services,
    matchingServices: services.length,
    synced: status.synced,
  });
}
