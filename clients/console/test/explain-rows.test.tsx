import { create } from "@bufbuild/protobuf";
import { renderToString } from "preact-render-to-string";
import { describe, expect, it } from "vitest";
import {
  PathMatchType,
  RouteKind,
  RouteRole,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
  StringMatchType,
} from "../../../gen/aether/registry/v1/projection_pb.js";
import { explainInView } from "../../../services/common/explain-decide.js";
import { mulberry32 } from "../../../services/common/mulberry32.js";
import { EMPTY_FORM, type ExplainForm, formTarget } from "../src/views/explain/explain-model.js";
import { ExplainResult } from "../src/views/explain/explain-result.js";
import { decisionRows, weightedChoices } from "../src/views/explain/explain-rows.js";

/** shop/checkout:8080 with a beta rule (header x-beta), a 90/10 split, and a redirect of /old. */
const checkout: ServiceConfigProjection = create(ServiceConfigProjectionSchema, {
  service: "shop/checkout",
  originCluster: "hub",
  version: "v1",
  routes: [
    {
      kind: RouteKind.HTTP,
      namespace: "shop",
      name: "checkout",
      role: RouteRole.PRODUCER,
      parentRefs: [{ service: "shop/checkout", port: 8080 }],
      rules: [
        {
          matches: [
            {
              path: { type: PathMatchType.PATH_PREFIX, value: "/cart" },
              headers: [{ type: StringMatchType.EXACT, name: "x-beta", value: "true" }],
            },
          ],
          backends: [{ service: "shop/checkout-beta", port: 8080, weight: 1 }],
        },
        {
          matches: [{ path: { type: PathMatchType.PATH_PREFIX, value: "/old" } }],
          filters: [
            { filter: { case: "requestRedirect", value: { statusCode: 301, path: undefined } } },
          ],
        },
        {
          name: "split",
          matches: [{ path: { type: PathMatchType.PATH_PREFIX, value: "/" } }],
          filters: [
            {
              filter: {
                case: "requestHeaderModifier",
                value: { set: [{ name: "x-via", value: "mesh" }] },
              },
            },
          ],
          backends: [
            { service: "shop/checkout-v1", port: 8080, weight: 90 },
            { service: "shop/checkout-v2", port: 8080, weight: 10 },
          ],
        },
      ],
    },
  ],
});

function explain(fields: Partial<ExplainForm>) {
  const request = formTarget({ ...EMPTY_FORM, from: "web", ...fields });
  if (!request.ok) throw new Error(request.error);
  return explainInView(request.target, [checkout], request.random());
}

const row = (rows: ReturnType<typeof decisionRows>, key: string) =>
  rows.find((r) => r.key === key)?.lines.join(" | ");

describe("the decision's rows", () => {
  it.each([
    [
      "the beta header picks rule 0, match 0",
      { url: "checkout.shop:8080/cart", headers: [{ name: "x-beta", value: "true" }] },
      {
        outcome: "forwarded",
        route: "HTTPRoute shop/checkout (producer)",
        rule: "#0",
        match: '#0: path prefix /cart, header x-beta = "true"',
        backend: "shop/checkout-beta:8080 (backend #0, weight 1, 100%)",
      },
    ],
    [
      "the constant 0 picks the first of the split",
      { url: "checkout.shop:8080/cart" },
      {
        rule: "#2 (split)",
        backend: "shop/checkout-v1:8080 (backend #0, weight 90, 90%)",
        applied: "request header set x-via: mesh",
      },
    ],
    [
      "a redirect says where",
      { url: "checkout.shop:8080/old/x" },
      {
        outcome: "redirected",
        status: "301",
        redirect: "301 Location: http://checkout.shop:8080/old/x",
      },
    ],
    [
      "a service without config goes to itself",
      { url: "other.shop:80/" },
      {
        outcome: "passthrough",
        config: "no routing config for shop/other: requests go to the service itself",
        backend: "shop/other:80 (the service itself)",
      },
    ],
    [
      "a port no route attaches to",
      { url: "checkout.shop:9999/" },
      { backend: "shop/checkout:9999 (the service itself)" },
    ],
  ])("%s", (_, fields, expected) => {
    const rows = decisionRows(explain(fields));
    for (const [key, text] of Object.entries(expected)) expect(row(rows, key), key).toBe(text);
  });

  it("shows the split as shares and the seeded pick as the CLI's --seed-random would", () => {
    const picks: number[] = [];
    for (const seed of ["1", "2", "3", "4", "36"]) {
      const explanation = explain({ url: "checkout.shop:8080/", seed });
      const choices = weightedChoices(explanation);
      expect(choices.map((c) => [c.address, c.percent])).toEqual([
        ["shop/checkout-v1:8080", 90],
        ["shop/checkout-v2:8080", 10],
      ]);
      const draw = mulberry32(Number(seed))();
      const expected = draw * 100 < 90 ? 0 : 1;
      expect(
        choices.findIndex((c) => c.chosen),
        `seed ${seed}`,
      ).toBe(expected);
      picks.push(expected);
    }
    // Seeds 4 and 36 draw above 0.9: both backends are picked.
    expect(picks).toEqual([0, 0, 0, 1, 1]);
  });

  it("renders the rows, the highlighted decision, the shares and the service link", () => {
    const html = renderToString(
      <ExplainResult explanation={explain({ url: "checkout.shop:8080/" })} random="constant 0" />,
    );
    expect(html).toContain('data-row="route" class="highlight"');
    expect(html).toContain("shop/checkout-v1:8080 (chosen)");
    expect(html).toContain("Weighted backends of the rule (pick: constant 0)");
    expect(html).toContain('href="#/service/shop/checkout"');
  });
});
