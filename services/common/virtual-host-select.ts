/**
 * Host-based service selection by VirtualHost names: which service a request
 * is for when its Host (or :authority) is not the service's own DNS name but
 * one of the extra names a projection carries (`virtual_hosts`). An exact
 * name wins over a wildcard, a longer wildcard over a shorter one (as Envoy
 * picks a virtual host by `domains`); `*.example.com` matches one or more
 * labels before `example.com`, never `example.com` itself. An entry for one
 * port applies only when that port is dialled. Two services carrying the same
 * name (possible only across origins, each origin's projector gives a name to
 * one service) go to the one first by `namespace/name`, so every caller picks
 * the same. Pure, no I/O.
 */
import type {
  ServiceConfigProjection,
  VirtualHost,
} from "../../gen/aether/registry/v1/projection_pb.js";
import {
  bestHostname,
  compareRanks,
  type HostnameRank,
  hostWithoutPort,
} from "./evaluator-match.js";

/** The service a host name selects, and through which VirtualHost. */
export interface VirtualHostMatch {
  /** The service, `namespace/name`. */
  readonly service: string;
  /** The host name pattern that matched, as carried (`*.`-prefixed for a wildcard). */
  readonly hostname: string;
  /** The VirtualHost entry that carries it. */
  readonly virtualHost: VirtualHost;
}

/**
 * The service whose VirtualHost names match `host` (any case, with or
 * without a port or a trailing dot) for a caller dialling `port` (0: any
 * port), among `projections`; undefined when none does.
 */
export function serviceForHost(
  projections: readonly ServiceConfigProjection[],
  host: string,
  port = 0,
): VirtualHostMatch | undefined {
  const name = hostWithoutPort(host);
  let best: { match: VirtualHostMatch; rank: HostnameRank } | undefined;
  for (const projection of projections) {
    for (const entry of projection.virtualHosts) {
      if (entry.port !== 0 && port !== 0 && entry.port !== port) continue;
      if (entry.hostnames.length === 0) continue; // bestHostname lets an empty list match any host
      const found = bestHostname(entry.hostnames, name);
      if (found?.hostname === undefined) continue;
      const order = best === undefined ? -1 : compareRanks(found.rank, best.rank);
      if (
        best === undefined ||
        order < 0 ||
        (order === 0 && projection.service < best.match.service)
      ) {
        best = {
          match: { service: projection.service, hostname: found.hostname, virtualHost: entry },
          rank: found.rank,
        };
      }
    }
  }
  return best?.match;
}
