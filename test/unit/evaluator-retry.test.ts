/**
 * The retry policy the evaluator reports with a decision, table-driven: the
 * matched rule's policy when the request is forwarded to a backend, nothing
 * when the data plane answers itself (redirect, preflight, 404, 500) or the
 * request passes through to the Service; and the policy never changes where
 * the request goes.
 */
import { describe, expect, it } from "vitest";
import { PathMatchType } from "../../gen/aether/registry/v1/projection_pb.js";
import {
  type DecisionRetry,
  type EvaluatorRequest,
  evaluate,
  type MeshDestination,
} from "../../services/common/evaluator.js";
import { type RuleInit, ruleProjection } from "../support/projections.js";

const SVC = "shop/cart";
const RETRY = { codes: [500, 503], attempts: 3, backoff: { nanos: 100_000_000 } };
const REPORTED: DecisionRetry = { codes: [500, 503], attempts: 3, backoffMs: 100 };
const toV1 = { backends: [{ service: "shop/cart-v1", port: 8080, weight: 1 }] };
const prefix = (value: string) => [{ path: { type: PathMatchType.PATH_PREFIX, value } }];

const projection = (rules: RuleInit[]) => ruleProjection(SVC, rules, { port: 8080 });

const get = (path: string, headers: Record<string, string> = {}): EvaluatorRequest => ({
  kind: "http",
  method: headers["access-control-request-method"] === undefined ? "GET" : "OPTIONS",
  host: "cart",
  path,
  headers,
});
const grpcCall: EvaluatorRequest = {
  kind: "grpc",
  authority: "cart",
  service: "pkg.Cart",
  method: "Add",
};
const MESH: MeshDestination = { service: SVC, port: 8080, callerNamespace: "web" };

describe("evaluate: the retry policy of a decision", () => {
  const cases: [
    name: string,
    rules: RuleInit[],
    request: EvaluatorRequest,
    outcome: string,
    retry: DecisionRetry | undefined,
  ][] = [
    ["forwarded: the rule's policy", [{ ...toV1, retry: RETRY }], get("/"), "forwarded", REPORTED],
    ["forwarded by a rule without a policy: none", [toV1], get("/"), "forwarded", undefined],
    [
      "an empty stanza: connection errors, the data plane's defaults",
      [{ ...toV1, retry: {} }],
      get("/"),
      "forwarded",
      { codes: [], attempts: undefined, backoffMs: undefined },
    ],
    [
      "attempts 0 is reported as retries turned off",
      [{ ...toV1, retry: { attempts: 0 } }],
      get("/"),
      "forwarded",
      { codes: [], attempts: 0, backoffMs: undefined },
    ],
    [
      "only the matched rule's policy counts",
      [
        { ...toV1, matches: prefix("/a"), retry: RETRY },
        { ...toV1, matches: prefix("/b"), retry: { attempts: 1 } },
      ],
      get("/b/x"),
      "forwarded",
      { codes: [], attempts: 1, backoffMs: undefined },
    ],
    [
      "a gRPC call an HTTPRoute forwards: the HTTPRoute's policy",
      [{ ...toV1, retry: RETRY }],
      grpcCall,
      "forwarded",
      REPORTED,
    ],
    [
      "a redirect is answered by the data plane: none",
      [
        {
          retry: RETRY,
          filters: [{ filter: { case: "requestRedirect", value: { statusCode: 301 } } }],
        },
      ],
      get("/"),
      "redirected",
      undefined,
    ],
    [
      "a CORS preflight is answered by the data plane: none",
      [
        {
          ...toV1,
          retry: RETRY,
          filters: [{ filter: { case: "cors", value: { allowOrigins: ["*"] } } }],
        },
      ],
      get("/", { origin: "https://a.example", "access-control-request-method": "POST" }),
      "cors-preflight",
      undefined,
    ],
    ["a rule without backends (500): none", [{ retry: RETRY }], get("/"), "no-backend", undefined],
    [
      "every backend weight 0 (500): none",
      [{ backends: [{ service: "shop/cart-v1", port: 8080, weight: 0 }], retry: RETRY }],
      get("/"),
      "no-backend",
      undefined,
    ],
    [
      "an unresolved backend (500): none",
      [{ backends: [{ service: "", port: 8080, weight: 1 }], retry: RETRY }],
      get("/"),
      "no-backend",
      undefined,
    ],
    [
      "no rule matches (404): none",
      [{ ...toV1, matches: prefix("/a"), retry: RETRY }],
      get("/b"),
      "no-route",
      undefined,
    ],
  ];
  it.each(cases)("%s", (_name, rules, request, outcome, retry) => {
    const decision = evaluate({ projections: [projection(rules)], request, mesh: MESH });
    expect(decision.outcome).toBe(outcome);
    expect(decision.retry).toEqual(retry);
  });

  it("a mesh request no route attaches to passes through with no policy", () => {
    const decision = evaluate({
      projections: [projection([{ ...toV1, retry: RETRY }])],
      request: get("/"),
      mesh: { ...MESH, port: 9090 },
    });
    expect(decision).toMatchObject({ outcome: "passthrough", retry: undefined });
  });

  it("a policy decides nothing about routing: the same backend, status and reason without it", () => {
    for (const request of [get("/"), get("/b"), grpcCall]) {
      const rules = (retry: RuleInit["retry"]): RuleInit[] => [
        { ...toV1, matches: prefix("/b"), retry },
        { backends: [{ service: "shop/cart-v2", port: 8080, weight: 1 }], retry },
      ];
      const withPolicy = evaluate({ projections: [projection(rules(RETRY))], request, mesh: MESH });
      const without = evaluate({
        projections: [projection(rules(undefined))],
        request,
        mesh: MESH,
      });
      expect({ ...withPolicy, retry: undefined, retrySource: undefined }).toEqual(without);
    }
  });
});
