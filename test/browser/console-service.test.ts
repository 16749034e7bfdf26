/**
 * The console's Service view in headless Chromium: `aetherctl dashboard`
 * in front of an in-process registrar (a spoke trusting only origin `hub`)
 * whose store holds hub's canary projection of shop/checkout (a rule with
 * matches, filters and backends weighted 80/20) and west's projection of
 * the same service (refused: west is not trusted). The tree shows routes →
 * rules → matches → backends with bars as wide as the weights' shares; the
 * refusal is shown with its reason; a new version put in the store
 * appears without a reload and adds a history row; the list finds a
 * service by typing and opens it with Enter. Nothing is fetched from
 * elsewhere and the page logs no error.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createMemoryBackend,
  createMemoryStore,
  type MemoryConfigStore,
} from "../../services/registrar/store/memory-store.js";
import { openConsole } from "../support/browser.js";
import { type ConsoleStack, startConsoleStack } from "../support/console-stack.js";
import type { RunningDashboard } from "../support/dashboard-run.js";
import { canaryProjection, makeProjection, versionAt } from "../support/projections.js";

let hub: MemoryConfigStore;
let stack: ConsoleStack;
let dashboard: RunningDashboard;
let browser: Browser;

beforeAll(async () => {
  const backend = createMemoryBackend();
  hub = createMemoryStore({ origin: "hub", backend });
  const west = createMemoryStore({ origin: "west", backend });
  await hub.put(canaryProjection("shop/checkout"));
  await hub.put(makeProjection("shop/cart"));
  await west.put(makeProjection("shop/checkout", { version: versionAt(5) }));
  stack = await startConsoleStack(["--cluster", "spoke", "--control-cluster", "hub"], {
    store: createMemoryStore({ origin: "spoke", backend }),
  });
  ({ dashboard, browser } = stack);
}, 60_000);

afterAll(() => stack?.stop());

/** Each backend's label and its bar's filled width over the bar's width. */
async function bars(page: Page): Promise<{ label: string; share: number; text: string }[]> {
  return page.locator(".node-backend").evaluateAll((items) =>
    items.map((item) => {
      const bar = item.querySelector(".weight-bar")?.getBoundingClientRect();
      const fill = item.querySelector(".weight-fill")?.getBoundingClientRect();
      return {
        label: item.querySelector(".node-label")?.textContent ?? "",
        share: bar === undefined || fill === undefined ? -1 : fill.width / bar.width,
        text: item.querySelector(".weight-percent")?.textContent ?? "",
      };
    }),
  );
}

describe("the console's Service view in Chromium", () => {
  it("draws the projection as a tree with weight bars, its facts and its rejections", async () => {
    const view = await openConsole(browser, `${dashboard.url}#/service/shop/checkout`);
    const { page } = view;
    const tree = page.getByRole("list", { name: "Projection" });
    await tree.waitFor();
    const text = (await tree.textContent()) ?? "";
    const order = [
      "HTTP routes (1)",
      "HTTPRoute shop/checkout-canary",
      'rule 0 "beta"',
      'path starts with /cart and method POST and header x-beta = "1"',
      "request headers: set x-canary=yes",
      "rewrite: prefix → /v2",
      "shop/checkout-v1:80",
      "shop/checkout-v2:80",
      "timeouts: request 10s",
    ].map((part) => text.indexOf(part));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    const drawn = await bars(page);
    expect(drawn.map(({ label, text }) => [label, text])).toEqual([
      ["shop/checkout-v1:80", "80%"],
      ["shop/checkout-v2:80", "20%"],
    ]);
    expect(drawn[0]?.share).toBeCloseTo(0.8, 1);
    expect(drawn[1]?.share).toBeCloseTo(0.2, 1);
    const facts = page.locator("dl.facts");
    await expect.poll(() => facts.textContent()).toContain("trusted by this registrar");
    expect(await facts.textContent()).toContain(versionAt(1));
    expect(await facts.textContent()).toContain("unsigned");
    const rejections = page.locator("table.rejections tbody tr");
    await expect
      .poll(() => rejections.allTextContents())
      .toEqual([
        expect.stringMatching(/^registrar of spoke \(this one\)\s*west.*untrusted_origin.*"west"/),
      ]);
    await view.screenshot("service");
    expect(view.errors).toEqual([]);
    expect(view.foreign).toEqual([]);
  });

  it("finds a service by typing and opens it with Enter", async () => {
    const view = await openConsole(browser, `${dashboard.url}#/service`);
    const { page } = view;
    const search = page.getByRole("searchbox", { name: "Find a service" });
    await expect
      .poll(() => page.getByRole("list", { name: "Services" }).getByRole("link").allTextContents())
      .toEqual(["shop/cart", "shop/checkout"]);
    await search.fill("check");
    await expect
      .poll(() => page.getByRole("list", { name: "Services" }).getByRole("link").allTextContents())
      .toEqual(["shop/checkout"]);
    await search.fill("shop");
    await search.press("ArrowDown");
    await page.keyboard.press("ArrowDown");
    expect(await page.locator(":focus").textContent()).toBe("shop/checkout");
    await page.keyboard.press("Escape");
    await search.fill("cart");
    await search.press("Enter");
    await expect.poll(() => page.locator("main h1").textContent()).toBe("Service shop/cart");
    expect(new URL(page.url()).hash).toBe("#/service/shop/cart");
    expect(view.errors).toEqual([]);
    expect(view.foreign).toEqual([]);
  });

  it("shows a new version without a reload and adds it to the history", async () => {
    const view = await openConsole(browser, `${dashboard.url}#/service/shop/checkout`);
    const { page } = view;
    const history = page.locator("table.history tbody tr");
    await expect.poll(() => history.count()).toBe(1);
    await page.evaluate(() => {
      (globalThis as { notReloaded?: boolean }).notReloaded = true;
    });
    await hub.put(canaryProjection("shop/checkout", { version: versionAt(2), weights: [1, 3] }));
    await expect
      .poll(async () => (await bars(page)).map(({ text }) => text))
      .toEqual(["25%", "75%"]);
    expect((await bars(page))[1]?.share).toBeCloseTo(0.75, 1);
    expect(await page.locator('[data-fact="version"]').textContent()).toBe(versionAt(2));
    await expect.poll(() => history.count()).toBe(2);
    expect(await history.first().textContent()).toContain(versionAt(2));
    expect(await history.first().getAttribute("aria-current")).toBe("true");
    expect(await history.nth(1).getAttribute("aria-current")).toBeNull();
    expect(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(
      true,
    );
    expect(view.errors).toEqual([]);
    expect(view.foreign).toEqual([]);
  });
});
