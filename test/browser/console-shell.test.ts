/**
 * The console's shell in a real browser (headless Chromium through
 * playwright-core): `aetherctl dashboard` serving the built console against
 * an in-process registrar, the page loaded with nothing fetched from
 * anywhere but the dashboard and no console error, each view reached from
 * the header's links and by its URL, the header's links in the tab order.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, openConsole } from "../support/browser.js";
import { CONSOLE_DIST } from "../support/console-build.js";
import { type RunningDashboard, startDashboard } from "../support/dashboard-run.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { makeProjection } from "../support/projections.js";

let registrar: TestRegistrar;
let dashboard: RunningDashboard;
let browser: Browser;

beforeAll(async () => {
  registrar = await startTestRegistrar(["--cluster", "hub"]);
  await registrar.registrar.store.put(makeProjection("shop/cart"));
  dashboard = await startDashboard(["--registrar", registrar.url, "--assets", CONSOLE_DIST]);
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await dashboard?.stop();
  await registrar?.stop();
});

describe("the console's shell in Chromium", () => {
  it("loads from the dashboard alone and reaches every view by link and by URL", async () => {
    const { page, errors, foreign } = await openConsole(browser, dashboard.url);
    const nav = page.getByRole("navigation", { name: "Views" });
    await expect
      .poll(() => nav.getByRole("link").allTextContents())
      .toEqual(["Fleet", "Service", "Explain", "Live"]);
    for (const view of ["Service", "Explain", "Live", "Fleet"]) {
      await nav.getByRole("link", { name: view }).click();
      await expect.poll(() => page.locator("main h1").first().textContent()).toContain(view);
      expect(await nav.locator('[aria-current="page"]').textContent()).toBe(view);
    }
    // The live stream opened (the Fleet view had its data first): the header says live.
    await expect.poll(() => page.locator("header output.badge").textContent()).toBe("live");
    await page.goto(`${dashboard.url}#/explain`);
    await expect.poll(() => page.locator("main h1").first().textContent()).toContain("Explain");
    expect(errors).toEqual([]);
    expect(foreign).toEqual([]);
  });

  it("puts the skip link and the header's links first in the tab order", async () => {
    const { page } = await openConsole(browser, dashboard.url);
    await page.locator("header nav a").first().waitFor();
    const focused: string[] = [];
    for (let i = 0; i < 5; i++) {
      await page.keyboard.press("Tab");
      focused.push((await page.locator(":focus").textContent()) ?? "");
    }
    expect(focused).toEqual(["Skip to content", "Fleet", "Service", "Explain", "Live"]);
  });

  it("goes to each view with g and the key its link announces, but not while typing in a field", async () => {
    const { page } = await openConsole(browser, dashboard.url);
    const heading = () => page.locator("main h1").first().textContent();
    for (const link of await page.locator("header nav a").all()) {
      const [, key] = ((await link.getAttribute("aria-keyshortcuts")) ?? "").split(" ");
      await page.keyboard.press("g");
      await page.keyboard.press(key ?? "");
      await expect.poll(heading).toContain(await link.textContent());
    }
    await page.keyboard.press("g");
    await page.keyboard.press("e");
    await expect.poll(heading).toContain("Explain");
    await page.getByLabel("URL").focus();
    await page.keyboard.press("g");
    await page.keyboard.press("f");
    // The shortcut would have changed the URL during the key press itself (pushState).
    expect(new URL(page.url()).hash).toMatch(/^#\/explain/);
    expect(await page.getByLabel("URL").inputValue()).toMatch(/gf$/);
  });
});
