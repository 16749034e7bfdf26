/**
 * The Service view's tree model: real projection messages (created from
 * gen/'s schemas) become routes → rules → matches, filters, backends with
 * their weights' shares, timeouts and retry, then the other sections.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  PathMatchType,
  RouteKind,
  ServiceConfigProjectionSchema,
  StringMatchType,
} from "../../../gen/aether/registry/v1/projection_pb.js";
import { projectionTree } from "../src/views/service/service-model.js";
import type { TreeNode } from "../src/views/service/tree-node.js";

/** The tree as indented lines `kind label [bar]`, for readable expectations. */
function lines(nodes: readonly TreeNode[], depth = 0): string[] {
  return nodes.flatMap((node) => [
    `${"  ".repeat(depth)}${node.kind} ${node.label}${node.bar === undefined ? "" : ` [${node.bar.label}]`}`,
    ...lines(node.children, depth + 1),
  ]);
}

const canary = create(ServiceConfigProjectionSchema, {
  service: "shop/checkout",
  originCluster: "east",
  version: "2026-11-01T00:00:00.000000001Z",
  routes: [
    {
      kind: RouteKind.HTTP,
      namespace: "shop",
      name: "checkout-canary",
      parentRefs: [{ service: "shop/checkout", port: 8080 }],
      rules: [
        {
          name: "beta",
          matches: [
            {
              path: { type: PathMatchType.EXACT, value: "/cart/pay" },
              method: "PUT",
              headers: [{ type: StringMatchType.REGULAR_EXPRESSION, name: "x-beta", value: "^1$" }],
              queryParams: [{ type: StringMatchType.REGULAR_EXPRESSION, name: "v", value: "^2" }],
            },
          ],
          filters: [
            {
              filter: {
                case: "requestHeaderModifier",
                value: { set: [{ name: "x-canary", value: "yes" }], remove: ["x-debug"] },
              },
            },
            { filter: { case: "urlRewrite", value: { path: { type: 2, value: "/v2" } } } },
          ],
          backends: [
            { service: "shop/checkout-v1", port: 8080, weight: 80 },
            { service: "shop/checkout-v2", port: 8080, weight: 20 },
            { service: "shop/checkout-v3", port: 8080, weight: 0 },
          ],
          timeouts: { request: { seconds: 10n }, backendRequest: { nanos: 250_000_000 } },
          retry: { codes: [502, 503], attempts: 3, backoff: { nanos: 100_000_000 } },
        },
        { backends: [] },
      ],
    },
    {
      kind: RouteKind.GRPC,
      namespace: "shop",
      name: "checkout-grpc",
      parentRefs: [{ service: "shop/checkout", sectionName: "grpc" }],
      rules: [
        {
          matches: [
            { grpcMethod: { type: StringMatchType.EXACT, service: "shop.Cart", method: "" } },
          ],
          backends: [{ service: "shop/checkout-v1", port: 9090, weight: 1 }],
        },
      ],
    },
  ],
});

describe("projectionTree", () => {
  it("draws HTTP and gRPC routes down to backends with their shares", () => {
    expect(lines(projectionTree(canary))).toEqual([
      "section HTTP routes (1)",
      "  route HTTPRoute shop/checkout-canary",
      '    rule rule 0 "beta"',
      '      match path = /cart/pay and method PUT and header x-beta ~ "^1$" and query v ~ "^2"',
      "      filter request headers: set x-canary=yes, remove x-debug",
      "      filter rewrite: prefix → /v2",
      "      backend shop/checkout-v1:8080 [80%]",
      "      backend shop/checkout-v2:8080 [20%]",
      "      backend shop/checkout-v3:8080 [0%]",
      "      policy timeouts: request 10s, per backend try 250ms",
      "      policy retry: 3 attempts on 502, 503 (backoff 100ms)",
      "    rule rule 1",
      "      match any request",
      "      backend no backend",
      "section gRPC routes (1)",
      "  route GRPCRoute shop/checkout-grpc",
      "    rule rule 0",
      "      match gRPC shop.Cart/*",
      "      backend shop/checkout-v1:9090 [100%]",
    ]);
  });

  it.each([
    { weights: [80, 20], labels: ["80%", "20%"] },
    { weights: [1, 1, 1], labels: ["33.3%", "33.3%", "33.3%"] },
    { weights: [1, 2], labels: ["33.3%", "66.7%"] },
    { weights: [0, 0], labels: ["0%", "0%"] },
    { weights: [5, 0], labels: ["100%", "0%"] },
  ])("gives backends weighted $weights the shares $labels", ({ weights, labels }) => {
    const projection = create(ServiceConfigProjectionSchema, {
      service: "shop/a",
      routes: [
        {
          kind: RouteKind.HTTP,
          rules: [
            { backends: weights.map((weight, i) => ({ service: `shop/b${i}`, port: 80, weight })) },
          ],
        },
      ],
    });
    const rule = projectionTree(projection)[0]?.children[0]?.children[0];
    const bars = rule?.children.filter((n) => n.kind === "backend").map((n) => n.bar);
    expect(bars?.map((bar) => bar?.label)).toEqual(labels);
    const total = weights.reduce((a, b) => a + b, 0);
    for (const [i, bar] of (bars ?? []).entries()) {
      expect(bar?.percent).toBeCloseTo(total === 0 ? 0 : ((weights[i] ?? 0) / total) * 100, 9);
    }
    expect(bars?.map((bar) => bar?.weight)).toEqual(weights);
  });

  it("says a zero weight gets no traffic, and keeps node ids stable across versions", () => {
    const first = projectionTree(canary);
    const again = projectionTree(
      create(ServiceConfigProjectionSchema, { ...canary, version: "2026-11-02T00:00:00Z" }),
    );
    const ids = (nodes: readonly TreeNode[]): string[] =>
      nodes.flatMap((n) => [n.id, ...ids(n.children)]);
    expect(ids(again)).toEqual(ids(first));
    expect(new Set(ids(first)).size).toBe(ids(first).length);
    const zero = first[0]?.children[0]?.children[0]?.children.find((n) =>
      n.label.startsWith("shop/checkout-v3"),
    );
    expect(zero?.detail).toBe("weight 0 (no traffic)");
  });

  it("summarises HTTP filters, backend TLS, virtual hosts and the mesh config", () => {
    const projection = create(ServiceConfigProjectionSchema, {
      service: "shop/a",
      httpFilters: [
        {
          namespace: "shop",
          name: "auth",
          phase: 1,
          priority: 5,
          targets: [{ service: "shop/a", port: 80 }],
          extension: { case: "lua", value: { source: "a\nb" } },
        },
      ],
      backendTls: [
        {
          port: 443,
          hostname: "a.shop",
          wellKnownCaCertificates: 1,
          policyNamespace: "shop",
          policyName: "tls",
        },
      ],
      virtualHosts: [{ hostnames: ["a.example"], namespace: "shop", name: "names" }],
      meshConfig: {
        name: "default",
        requestTimeout: { seconds: 5n },
        retryBudget: { percent: 20, minRetryConcurrency: 3 },
      },
    });
    expect(lines(projectionTree(projection))).toEqual([
      "section HTTP filters (1)",
      "  filter 1. HTTPFilter shop/auth",
      "    item targets shop/a:80",
      "    item runs lua (2 lines)",
      "section Backend TLS (1)",
      "  item port 443: TLS to a.shop",
      "section Virtual hosts (1)",
      "  item a.example",
      "section Mesh config (3)",
      "  item name default",
      "  policy request timeout 5s",
      "  policy retry budget 20%, min 3 at once",
    ]);
  });
});
