/**
 * The statuses the request evaluator answers with: the HTTP status of an
 * answer the data plane gives itself, by route kind where the Gateway API
 * specs differ, and the gRPC status a gRPC client sees for it. Pure.
 *
 * The specs, checked against each outcome:
 * - no route matches: 404; gRPC `UNIMPLEMENTED` (Gateway API listener
 *   rules: "HTTP returns a 404 status code, while gRPC returns an
 *   Unimplemented status code");
 * - a rule with no usable backend (none, every one weight 0 or invalid):
 *   HTTPRoute 500 (HTTPRouteRule.backendRefs), GRPCRoute `UNAVAILABLE`
 *   (GRPCRouteRule.backendRefs), given as 503, the HTTP status gRPC clients
 *   read as `UNAVAILABLE`, so a data plane that answers without a
 *   `grpc-status` still conforms;
 * - anything else the data plane answers (a redirect, or the 500 of an
 *   HTTPRoute that a gRPC call matched): what gRPC's "HTTP to gRPC status
 *   code mapping" makes of the HTTP status, as no `grpc-status` is sent.
 */
import { RouteKind } from "../../gen/aether/registry/v1/projection_pb.js";

/**
 * gRPC's "HTTP to gRPC Status Code Mapping" (grpc/grpc
 * doc/http-grpc-status-mapping.md); every other status is `Unknown`. 200 is
 * the evaluator's "forwarded": the backend's own gRPC status applies, `OK`
 * when it succeeds.
 */
const GRPC_STATUS_BY_HTTP: Readonly<Record<number, string>> = {
  200: "OK",
  400: "Internal",
  401: "Unauthenticated",
  403: "PermissionDenied",
  404: "Unimplemented",
  429: "Unavailable",
  502: "Unavailable",
  503: "Unavailable",
  504: "Unavailable",
};

/**
 * Maps an HTTP status to the gRPC status a gRPC client sees, per gRPC's
 * "HTTP to gRPC status code mapping" (400 → Internal, 401 →
 * Unauthenticated, 403 → PermissionDenied, 404 → Unimplemented, 429, 502,
 * 503 and 504 → Unavailable, anything else → Unknown); 200 → OK.
 */
export function grpcStatusForHttp(status: number): string {
  return GRPC_STATUS_BY_HTTP[status] ?? "Unknown";
}

/**
 * The status of a request whose matched rule has no backend that can take
 * it: 500 for an HTTPRoute, 503 (gRPC `Unavailable`) for a GRPCRoute.
 */
export function noBackendStatus(kind: RouteKind): number {
  return kind === RouteKind.GRPC ? 503 : 500;
}
