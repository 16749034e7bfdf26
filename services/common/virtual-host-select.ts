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
  const name = hostnameOf(host);
  let best: { match: VirtualHostMatch; rank: number } | undefined;
  for (const projection of projections) {
    for (const entry of projection.virtualHosts) {
      if (entry.port !== 0 && port !== 0 && entry.port !== port) continue;
      for (const pattern of entry.hostnames) {
        const rank = rankOf(pattern, name);
        if (rank === undefined) continue;
        const better =
          best === undefined ||
          rank > best.rank ||
          (rank === best.rank && projection.service < best.match.service);
        if (better) {
          best = {
            match: { service: projection.service, hostname: pattern, virtualHost: entry },
            rank,
          };
        }
      }
    }
  }
  return best?.match;
}

/** The host name of a Host header value: lower case, without port or trailing dot. */
function hostnameOf(host: string): string {
  let name = host.trim().toLowerCase();
  if (name.startsWith("[")) return name; // an IPv6 literal: never a virtual host name
  const colon = name.lastIndexOf(":");
  if (colon >= 0) name = name.slice(0, colon);
  return name.endsWith(".") ? name.slice(0, -1) : name;
}

/**
 * How specific a match of `pattern` on `name` is (higher wins): an exact
 * match above every wildcard, a wildcard by the length of its suffix;
 * undefined when it does not match.
 */
function rankOf(pattern: string, name: string): number | undefined {
  if (!pattern.startsWith("*.")) return pattern === name ? Number.MAX_SAFE_INTEGER : undefined;
  const suffix = pattern.slice(1); // ".example.com"
  return name.length > suffix.length && name.endsWith(suffix) ? suffix.length : undefined;
}
