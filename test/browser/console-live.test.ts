/**
 * The console's Live view in a real browser (headless Chromium through
 * playwright-core): `aetherctl dashboard` in front of an in-process
 * registrar over an embedded store's backend. A change to the store appears
 * in the view without a reload; the registrar stopped, the header's badge
 * and the view say the stream is down; a registrar started again on the same
 * port over the same backend, they say it resumed, and a change made while
 * it was down shows.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createMemoryBackend,
  createMemoryStore,
  type MemoryBackend,
} from "../../services/registrar/store/memory-store.js";
import { launchBrowser, openConsole } from "../support/browser.js";
import { CONSOLE_DIST } from "../support/console-build.js";
import { type RunningDashboard, startDashboard } from "../support/dashboard-run.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { makeProjection, versionAt } from "../support/projections.js";

let backend: MemoryBackend;
let registrar: TestRegistrar | undefined;
let dashboard: RunningDashboard;
let browser: Browser;

/** A registrar of cluster hub over a new store on the shared backend, on `port` (0: a free one). */
function startHub(port: number): Promise<TestRegistrar> {
  const store = createMemoryStore({ origin: "hub", backend });
  return startTestRegistrar(["--cluster", "hub", "--listen", `127.0.0.1:${port}`], { store });
}

/** Writes `projection` to the shared backend as the hub (whether a registrar runs or not). */
async function put(service: string, version: string): Promise<void> {
  const store = createMemoryStore({ origin: "hub", backend });
  await store.put(makeProjection(service, { version }));
  await store.close();
}

beforeAll(async () => {
  backend = createMemoryBackend();
  await put("shop/cart", versionAt(1));
  registrar = await startHub(0);
  dashboard = await startDashboard(["--registrar", registrar.url, "--assets", CONSOLE_DIST]);
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await dashboard?.stop();
  await registrar?.stop();
});

describe("the console's Live view in Chromium", () => {
  it("shows a change without a reload, says when the stream is down, and when it resumed with what changed meanwhile", async () => {
    const { page, errors, foreign, screenshot } = await openConsole(
      browser,
      `${dashboard.url}#/live`,
    );
    const view = page.locator("section.live");
    const badge = page.locator("header .badge");
    await view.and(page.locator('[data-connection="live"]')).waitFor({ timeout: 15_000 });
    await expect.poll(() => view.locator(".live-headline").textContent()).toMatch(/^Live since /);
    await page.evaluate(() => {
      (globalThis as { marker?: string }).marker = "same page";
    });

    await put("shop/checkout", versionAt(2));
    const checkout = view.locator('tr[data-service="shop/checkout"]');
    await checkout.waitFor({ timeout: 10_000 });
    expect(await checkout.locator("a").getAttribute("href")).toBe("#/service/shop/checkout");
    expect(await page.evaluate(() => (globalThis as { marker?: string }).marker)).toBe("same page");

    const port = Number(new URL((registrar as TestRegistrar).url).port);
    await registrar?.stop();
    registrar = undefined;
    await view.and(page.locator('[data-connection="down"]')).waitFor({ timeout: 15_000 });
    await expect.poll(() => view.locator(".live-headline").textContent()).toMatch(/^Down since /);
    await expect.poll(() => badge.textContent()).toMatch(/down/i);
    await screenshot("live-down");

    await put("shop/late", versionAt(3));
    registrar = await startHub(port);
    await view.and(page.locator('[data-connection="live"]')).waitFor({ timeout: 30_000 });
    await expect
      .poll(() => view.locator(".live-resumption").textContent())
      .toMatch(/^Resumed at \d\d:\d\d:\d\d UTC (by resume|with a fresh snapshot)/);
    await expect.poll(() => badge.textContent()).not.toMatch(/down/i);
    await view.locator('tr[data-service="shop/late"]').waitFor({ timeout: 10_000 });
    expect(await page.evaluate(() => (globalThis as { marker?: string }).marker)).toBe("same page");
    await screenshot("live-resumed");
    expect(foreign).toEqual([]);
    // The stream's failure while the registrar was down may log failed requests; nothing else.
    expect(errors.filter((e) => !/Failed to load resource|ERR_|net::/.test(e))).toEqual([]);
  }, 90_000);
});
