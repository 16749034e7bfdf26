/**
 * The Service view's tree component rendered to HTML: native details and
 * summaries, every branch open, each backend's bar as wide as its share
 * with the percentage written.
 */
import { create } from "@bufbuild/protobuf";
import { render } from "preact-render-to-string";
import { describe, expect, it } from "vitest";
import {
  RouteKind,
  ServiceConfigProjectionSchema,
} from "../../../gen/aether/registry/v1/projection_pb.js";
import { projectionTree } from "../src/views/service/service-model.js";
import { ProjectionTree } from "../src/views/service/service-tree.js";

const projection = create(ServiceConfigProjectionSchema, {
  service: "shop/cart",
  routes: [
    {
      kind: RouteKind.HTTP,
      namespace: "shop",
      name: "r",
      rules: [
        {
          backends: [
            { service: "shop/v1", port: 80, weight: 3 },
            { service: "shop/v2", port: 80, weight: 1 },
          ],
        },
      ],
    },
  ],
});

describe("ProjectionTree", () => {
  it("renders open details down to backends with bars of their shares", () => {
    const html = render(<ProjectionTree nodes={projectionTree(projection)} />);
    expect(html.match(/<details open/g)?.length).toBe(3);
    expect(html.match(/<summary>/g)?.length).toBe(3);
    expect([...html.matchAll(/style="width:\s*([\d.]+)%;?"/g)].map((m) => m[1])).toEqual([
      "75",
      "25",
    ]);
    expect(html).toContain(">75%<");
    expect(html).toContain(">25%<");
  });

  it("says so when the projection has nothing to draw", () => {
    expect(render(<ProjectionTree nodes={[]} />)).toContain("carries no routes");
  });
});
