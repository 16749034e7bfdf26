/**
 * What the mesh defaults (an origin's MeshConfig, the `@mesh` record) add to
 * a forwarded request's decision: the request timeout and retry policy in
 * effect (the matched rule's own first, each saying where it came from), and
 * the retry budget and outlier detection as information. None of it changes
 * where a request goes. Pure, no I/O.
 */
import type { MeshConfig, RouteRule } from "../../gen/aether/registry/v1/projection_pb.js";
import { durationMs, retryOf } from "./evaluator-filters.js";
import type {
  DecisionMeshPolicies,
  DecisionRequestTimeout,
  DecisionRetry,
  PolicySource,
} from "./evaluator-types.js";

/** The policies in effect for a forwarded request; see {@link policiesInEffect}. */
export interface PoliciesInEffect {
  /** The request timeout in effect, with its source; undefined when neither sets one. */
  readonly requestTimeout: DecisionRequestTimeout | undefined;
  /** The retry policy in effect; undefined when neither has one. */
  readonly retry: DecisionRetry | undefined;
  /** Where the retry policy comes from; undefined when there is none. */
  readonly retrySource: PolicySource | undefined;
  /** The defaults' retry budget and outlier detection; undefined when they set neither. */
  readonly meshPolicies: DecisionMeshPolicies | undefined;
}

/** Nothing in effect: what a decision the data plane answers itself reports. */
export const NO_POLICIES: PoliciesInEffect = {
  requestTimeout: undefined,
  retry: undefined,
  retrySource: undefined,
  meshPolicies: undefined,
};

/**
 * The policies in effect for a request forwarded by `rule` (undefined: a
 * mesh passthrough, which no rule decided) under the mesh defaults `mesh`:
 * the rule's `timeouts.request` else the defaults' `request_timeout`; the
 * rule's `retry` when it has one (it replaces the default whole, even an
 * empty one), else the defaults' `retry`; the defaults' retry budget and
 * outlier detection as they are.
 */
export function policiesInEffect(
  rule: RouteRule | undefined,
  mesh: MeshConfig | undefined,
): PoliciesInEffect {
  const ruleTimeout = durationMs(rule?.timeouts?.request);
  const meshTimeout = durationMs(mesh?.requestTimeout);
  const requestTimeout: DecisionRequestTimeout | undefined =
    ruleTimeout !== undefined
      ? { ms: ruleTimeout, source: "rule" }
      : meshTimeout !== undefined
        ? { ms: meshTimeout, source: "mesh" }
        : undefined;
  const ruleRetry = retryOf(rule?.retry);
  const meshRetry = retryOf(mesh?.retry);
  const retrySource: PolicySource | undefined =
    ruleRetry !== undefined ? "rule" : meshRetry !== undefined ? "mesh" : undefined;
  return {
    requestTimeout,
    retry: ruleRetry ?? meshRetry,
    retrySource,
    meshPolicies: meshPoliciesOf(mesh),
  };
}

/** The defaults' retry budget and outlier detection, times in milliseconds. */
function meshPoliciesOf(mesh: MeshConfig | undefined): DecisionMeshPolicies | undefined {
  const budget = mesh?.retryBudget;
  const outlier = mesh?.outlierDetection;
  if (budget === undefined && outlier === undefined) return undefined;
  return {
    retryBudget:
      budget === undefined
        ? undefined
        : { percent: budget.percent, minRetryConcurrency: budget.minRetryConcurrency },
    outlierDetection:
      outlier === undefined
        ? undefined
        : {
            consecutive5xxErrors: outlier.consecutive5xxErrors,
            intervalMs: durationMs(outlier.interval),
            baseEjectionTimeMs: durationMs(outlier.baseEjectionTime),
            maxEjectionPercent: outlier.maxEjectionPercent,
          },
  };
}
