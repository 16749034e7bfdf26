/**
 * The mesh defaults (MeshConfig) in the evaluator's decision, table-driven:
 * a forwarded request (or a mesh passthrough) reports the request timeout in
 * effect (the rule's, else the defaults', saying which), the retry policy in
 * effect (the rule's own replaces the default whole, even an empty one) and
 * the retry budget and outlier detection as information; an answer the data
 * plane gives itself reports none of it; and the defaults never change where
 * a request goes.
 */
import { describe, expect, it } from "vitest";
import { PathMatchType } from "../../gen/aether/registry/v1/projection_pb.js";
import {
  type Decision,
  type EvaluatorRequest,
  evaluate,
  type MeshDestination,
} from "../../services/common/evaluator.js";
import {
  type MeshConfigInit,
  meshRecord,
  type RuleInit,
  ruleProjection,
} from "../support/projections.js";

const SVC = "shop/cart";
const MESH: MeshDestination = { service: SVC, port: 8080, callerNamespace: "web" };
const toV1 = { backends: [{ service: "shop/cart-v1", port: 8080, weight: 1 }] };
const get = (path: string): EvaluatorRequest => ({
  kind: "http",
  method: "GET",
  host: "cart",
  path,
});
const seconds = (s: number) => ({ seconds: BigInt(s) });
const DEFAULTS: MeshConfigInit = {
  requestTimeout: seconds(15),
  retry: { codes: [503], attempts: 2, backoff: { nanos: 25_000_000 } },
  retryBudget: { percent: 20, minRetryConcurrency: 3 },
  outlierDetection: {
    consecutive5xxErrors: 5,
    interval: seconds(10),
    baseEjectionTime: seconds(30),
    maxEjectionPercent: 50,
  },
};
const MESH_POLICIES = {
  retryBudget: { percent: 20, minRetryConcurrency: 3 },
  outlierDetection: {
    consecutive5xxErrors: 5,
    intervalMs: 10_000,
    baseEjectionTimeMs: 30_000,
    maxEjectionPercent: 50,
  },
};
const MESH_RETRY = { codes: [503], attempts: 2, backoffMs: 25 };

type Reported = Pick<
  Decision,
  "outcome" | "requestTimeout" | "retry" | "retrySource" | "meshPolicies"
>;

function decide(
  rules: RuleInit[],
  defaults: MeshConfigInit | undefined,
  request = get("/"),
  port = 8080,
) {
  return evaluate({
    projections: [ruleProjection(SVC, rules, { port: 8080 })],
    request,
    mesh: { ...MESH, port },
    ...(defaults === undefined ? {} : { meshDefaults: meshRecord(defaults).meshConfig }),
  });
}

describe("evaluate: the mesh defaults in a decision", () => {
  const cases: [
    name: string,
    rules: RuleInit[],
    defaults: MeshConfigInit | undefined,
    expected: Reported,
  ][] = [
    [
      "a rule that sets nothing: the defaults' timeout and retry, and their policies",
      [toV1],
      DEFAULTS,
      {
        outcome: "forwarded",
        requestTimeout: { ms: 15_000, source: "mesh" },
        retry: MESH_RETRY,
        retrySource: "mesh",
        meshPolicies: MESH_POLICIES,
      },
    ],
    [
      "the rule's own request timeout and retry win",
      [{ ...toV1, timeouts: { request: seconds(2) }, retry: { codes: [500], attempts: 1 } }],
      DEFAULTS,
      {
        outcome: "forwarded",
        requestTimeout: { ms: 2_000, source: "rule" },
        retry: { codes: [500], attempts: 1, backoffMs: undefined },
        retrySource: "rule",
        meshPolicies: MESH_POLICIES,
      },
    ],
    [
      "a rule's empty retry replaces the default whole (nothing of the default's is merged in)",
      [{ ...toV1, retry: {} }],
      DEFAULTS,
      {
        outcome: "forwarded",
        requestTimeout: { ms: 15_000, source: "mesh" },
        retry: { codes: [], attempts: undefined, backoffMs: undefined },
        retrySource: "rule",
        meshPolicies: MESH_POLICIES,
      },
    ],
    [
      "a rule timeout 0 (disabled) is the rule's, not the default's",
      [{ ...toV1, timeouts: { request: seconds(0) } }],
      DEFAULTS,
      {
        outcome: "forwarded",
        requestTimeout: { ms: 0, source: "rule" },
        retry: MESH_RETRY,
        retrySource: "mesh",
        meshPolicies: MESH_POLICIES,
      },
    ],
    [
      "a rule with only a backend request timeout: the whole request's is the default's",
      [{ ...toV1, timeouts: { backendRequest: seconds(1) } }],
      DEFAULTS,
      {
        outcome: "forwarded",
        requestTimeout: { ms: 15_000, source: "mesh" },
        retry: MESH_RETRY,
        retrySource: "mesh",
        meshPolicies: MESH_POLICIES,
      },
    ],
    [
      "defaults with only a timeout: no retry, no policies",
      [toV1],
      { requestTimeout: seconds(3) },
      {
        outcome: "forwarded",
        requestTimeout: { ms: 3_000, source: "mesh" },
        retry: undefined,
        retrySource: undefined,
        meshPolicies: undefined,
      },
    ],
    [
      "defaults with only a retry budget: the budget alone",
      [toV1],
      { retryBudget: { percent: 10 } },
      {
        outcome: "forwarded",
        requestTimeout: undefined,
        retry: undefined,
        retrySource: undefined,
        meshPolicies: {
          retryBudget: { percent: 10, minRetryConcurrency: 0 },
          outlierDetection: undefined,
        },
      },
    ],
    [
      "no defaults: the rule's alone, as before",
      [{ ...toV1, retry: { attempts: 1 } }],
      undefined,
      {
        outcome: "forwarded",
        requestTimeout: undefined,
        retry: { codes: [], attempts: 1, backoffMs: undefined },
        retrySource: "rule",
        meshPolicies: undefined,
      },
    ],
    [
      "a rule without backends (500) is answered by the data plane: none of it",
      [{}],
      DEFAULTS,
      {
        outcome: "no-backend",
        requestTimeout: undefined,
        retry: undefined,
        retrySource: undefined,
        meshPolicies: undefined,
      },
    ],
    [
      "a redirect: none of it",
      [{ filters: [{ filter: { case: "requestRedirect", value: { statusCode: 301 } } }] }],
      DEFAULTS,
      {
        outcome: "redirected",
        requestTimeout: undefined,
        retry: undefined,
        retrySource: undefined,
        meshPolicies: undefined,
      },
    ],
    [
      "no rule matches (404): none of it",
      [{ ...toV1, matches: [{ path: { type: PathMatchType.PATH_PREFIX, value: "/a" } }] }],
      DEFAULTS,
      {
        outcome: "no-route",
        requestTimeout: undefined,
        retry: undefined,
        retrySource: undefined,
        meshPolicies: undefined,
      },
    ],
  ];
  it.each(cases)("%s", (_name, rules, defaults, expected) => {
    const decision = decide(rules, defaults);
    expect({
      outcome: decision.outcome,
      requestTimeout: decision.requestTimeout,
      retry: decision.retry,
      retrySource: decision.retrySource,
      meshPolicies: decision.meshPolicies,
    }).toEqual(expected);
  });

  it("a mesh request no route attaches to passes through to the Service under the defaults", () => {
    const decision = decide([{ ...toV1, retry: { attempts: 1 } }], DEFAULTS, get("/"), 9090);
    expect(decision).toMatchObject({
      outcome: "passthrough",
      requestTimeout: { ms: 15_000, source: "mesh" },
      retry: MESH_RETRY,
      retrySource: "mesh",
      meshPolicies: MESH_POLICIES,
    });
  });

  it("the defaults decide nothing about routing: the same backend, status, headers and reason without them", () => {
    for (const path of ["/", "/b"]) {
      const rules: RuleInit[] = [
        { ...toV1, matches: [{ path: { type: PathMatchType.PATH_PREFIX, value: "/b" } }] },
        { backends: [{ service: "shop/cart-v2", port: 8080, weight: 1 }] },
      ];
      const withDefaults = decide(rules, DEFAULTS, get(path));
      const without = decide(rules, undefined, get(path));
      expect({
        ...withDefaults,
        requestTimeout: undefined,
        retry: undefined,
        retrySource: undefined,
        meshPolicies: undefined,
      }).toEqual(without);
    }
  });
});
