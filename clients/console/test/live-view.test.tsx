/** The Live view rendered (preact-render-to-string) over a fixed feed state. */
import { renderToString } from "preact-render-to-string";
import { describe, expect, it } from "vitest";
import type { ConfigClient } from "../src/api.js";
import { initialLiveState, type LiveFeed, type LiveState } from "../src/live/live-feed.js";
import { LiveView } from "../src/views/live/live-view.js";

function render(state: LiveState): string {
  const live: LiveFeed = { current: () => state, subscribe: () => () => {}, start: () => {} };
  return renderToString(
    <LiveView
      client={{} as ConfigClient}
      live={live}
      ready={() => {}}
      route={{ view: "live", service: "", query: new Map() }}
      navigate={() => {}}
    />,
  );
}

describe("LiveView", () => {
  it("says the stream is down with its error, and that nothing changed yet", () => {
    const html = render({
      ...initialLiveState(Date.UTC(2026, 0, 1, 8, 0, 0)),
      connection: "down",
      error: "unavailable",
    });
    expect(html).toContain('data-connection="down"');
    expect(html).toContain("Down since 08:00:00 UTC: unavailable");
    expect(html).toContain("No change since the page opened.");
  });

  it("lists the changes newest first, each service linked to its view", () => {
    const html = render({
      ...initialLiveState(0),
      connection: "live",
      revision: 42n,
      changes: [
        { type: "upsert", service: "shop/cart", origin: "hub", version: "9", receivedAt: 2000 },
        { type: "delete", service: "shop/old", origin: "hub", version: "", receivedAt: 1000 },
      ],
    });
    expect(html).toContain('<span class="mono">42</span>');
    expect(html).toContain('<a href="#/service/shop/cart">shop/cart</a>');
    expect(html.indexOf("shop/cart")).toBeLessThan(html.indexOf("shop/old"));
    expect(html).toMatch(/data-service="shop\/old" data-type="delete"/);
  });
});
