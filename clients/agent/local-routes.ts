/**
 * The agent's local (class-2) routes: the cluster's own HTTPRoutes and
 * GRPCRoutes for the services its workloads call. The projection lives in
 * `services/common/local-projection.ts` and the following of the source in
 * `services/sources/local-routes.ts`, shared with the registrar (which
 * publishes their digests); re-exported here for the agent.
 */
export {
  createLocalRoutes,
  type LocalProjection,
  type LocalRoutes,
  type LocalRoutesOptions,
  projectLocalRoutes,
} from "../../services/sources/local-routes.js";
