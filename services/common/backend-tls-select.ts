/**
 * Which BackendTLSPolicy settings of a projection apply to a connection to one
 * of its service's ports: the entry for that port, else the entry for every
 * port (port 0), else none (the port is called without TLS). The data plane
 * and `aetherctl explain` decide it the same way. Pure.
 */
import type {
  BackendTls,
  ServiceConfigProjection,
} from "../../gen/aether/registry/v1/projection_pb.js";

/**
 * Returns the `backend_tls` entry of `projection` that applies to `port`:
 * the one for that port, else the one for every port; undefined when none
 * does (or there is no projection).
 */
export function backendTlsFor(
  projection: ServiceConfigProjection | undefined,
  port: number,
): BackendTls | undefined {
  const entries = projection?.backendTls ?? [];
  return entries.find((e) => e.port === port && port !== 0) ?? entries.find((e) => e.port === 0);
}
