/**
 * `npm run console:screenshots`: the README's pictures of the console.
 * Starts the sandbox in this process on free ports (the repository's
 * examples, mutual TLS and signing as `npm start` runs them), opens the Fleet
 * view and the Service view of shop/checkout at 1280x800 in headless
 * Chromium (`/usr/bin/chromium`, or `$AETHER_CHROMIUM`), waits until each
 * has rendered its data, and writes docs/console/fleet.png and
 * docs/console/service.png.
 */
import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { chromium, type Page } from "playwright-core";
import { buildConsole, startQuietSandbox } from "../bench/console/console-sandbox.js";

const ROOT = resolve(import.meta.dirname, "..");
const OUT = resolve(ROOT, "docs/console");
/** The service the Service view shows. */
const SERVICE = "shop/checkout";
/** How long a view may take to render its data. */
const VIEW_TIMEOUT_MS = 30_000;

/** Opens `url` in `page`, waits for each of `selectors`, then for the fonts and a settled frame, and saves `file`. */
async function capture(page: Page, url: string, selectors: string[], file: string): Promise<void> {
  await page.goto(url);
  for (const selector of selectors) {
    await page.locator(selector).first().waitFor({ timeout: VIEW_TIMEOUT_MS });
  }
  await page.evaluate(async () => {
    await document.fonts.ready;
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  });
  await page.screenshot({ path: resolve(OUT, file) });
  process.stdout.write(`wrote docs/console/${file}\n`);
}

await buildConsole();
await mkdir(OUT, { recursive: true });
const sandbox = await startQuietSandbox([]);
const browser = await chromium.launch({
  executablePath: process.env.AETHER_CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const base = sandbox.info.console;
  // The projection's facts and its backends' weight bars: the heading alone renders before the data.
  await capture(page, `${base}#/service/${SERVICE}`, ["dl.facts", ".node-backend"], "service.png");
  await capture(page, `${base}#/fleet`, ["section.fleet[data-state=ready]"], "fleet.png");
} finally {
  await browser.close();
  await sandbox.stop();
}
