/**
 * A projection's VirtualHost names as `aetherctl get` prints them: one
 * header value listing, per accepted VirtualHost, its host names, the port
 * it applies to and where it came from. Pure.
 */
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import { describePortScope } from "./projection-describe.js";

/**
 * `*.cart.shop.example, cart.shop.example (every port, VirtualHost
 * shop/cart-names)`, entries separated by `; `; `""` when the projection
 * carries none.
 */
export function describeVirtualHosts(projection: ServiceConfigProjection): string {
  return projection.virtualHosts
    .map((entry) => {
      const port = describePortScope(entry);
      return `${entry.hostnames.join(", ")} (${port}, VirtualHost ${entry.namespace}/${entry.name})`;
    })
    .join("; ");
}
