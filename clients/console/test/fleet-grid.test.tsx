/**
 * The fleet grid and the view rendered to HTML: the contract other tests
 * rely on (`tr[data-service]`, `td[data-cluster][data-state]` with the short
 * version), every state told in words, one cell in the tab order, and the
 * view's loading state before data.
 */
import { renderToString } from "preact-render-to-string";
import { describe, expect, it } from "vitest";
import { initialLiveState } from "../src/live/live-feed.js";
import { parseRoute } from "../src/route.js";
import type { ViewProps } from "../src/view-props.js";
import { NO_FILTERS } from "../src/views/fleet/fleet-filters.js";
import { FleetGrid } from "../src/views/fleet/fleet-grid.js";
import { fleetModel } from "../src/views/fleet/fleet-model.js";
import { FleetView } from "../src/views/fleet/fleet-view.js";
import { fleetAnswer } from "./fleet-fixtures.js";

describe("FleetGrid", () => {
  const html = renderToString(
    <FleetGrid model={fleetModel(fleetAnswer(), NO_FILTERS)} onOpen={() => {}} />,
  );

  it("renders a row per service and a cell per cluster with its state and short version", () => {
    expect(html).toContain('role="grid"');
    expect(html.match(/<tr data-service="[^"]+"/g)).toEqual([
      '<tr data-service="shop/cart"',
      '<tr data-service="web/frontend"',
    ]);
    const cell =
      /<td class="cell state-rejecting" data-cluster="east" data-state="rejecting"[^>]*>(.*?)<\/td>/.exec(
        html,
      );
    expect(cell?.[1]).toContain("12-03 11:58:30.000");
    expect(cell?.[1]).toContain("rejecting");
    expect(cell?.[1]).toContain("bad_signature");
    expect(html).toContain('data-cluster="west" title="west: does not report this service"');
    expect(html).toContain("west (stale)");
  });

  it("puts exactly one cell in the tab order", () => {
    expect(html.match(/tabindex="0"/gi)).toHaveLength(1);
  });
});

describe("FleetView", () => {
  it("says loading before the first answer", () => {
    const state = initialLiveState(0);
    const props = {
      client: { getFleetStatus: () => new Promise(() => {}) } as unknown as ViewProps["client"],
      live: { current: () => state, subscribe: () => () => {}, start: () => {} },
      route: parseRoute("#/fleet?q=cart"),
      navigate: () => {},
      ready: () => {},
    };
    const html = renderToString(<FleetView {...props} />);
    expect(html).toContain('<section class="fleet" data-state="loading"');
    expect(html).toMatch(
      /<label for="fleet-q">Service<\/label><input id="fleet-q" name="q" type="search" value="cart"/,
    );
  });
});
