/**
 * A real browser for the console's tests: Debian's Chromium
 * (`/usr/bin/chromium`, installed by `scripts/ensure-test-deps.sh`) driven
 * headless through playwright-core, one browser per test file. Every page
 * records its console errors, failed requests and any request to another
 * origin than the console's (the console must not call anywhere else), and
 * screenshots go to `test-artifacts/console/` (kept by CI as artifacts).
 */
import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

const ROOT = resolve(import.meta.dirname, "../..");
/** Where screenshots are saved. */
export const ARTIFACTS_DIR = resolve(ROOT, "test-artifacts/console");

/** A page of the console with what it reported. */
export interface ConsolePage {
  readonly page: Page;
  /** Console errors and uncaught exceptions. */
  readonly errors: string[];
  /** URLs of requests to another origin than the console's. */
  readonly foreign: string[];
  /** Saves a full-page screenshot as `test-artifacts/console/NAME.png`; resolves with its path. */
  screenshot(name: string): Promise<string>;
}

/** Launches headless Chromium (`--no-sandbox`: the tests run as root in CI). */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.AETHER_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}

/**
 * Opens `url` (the console, `http://127.0.0.1:PORT/#/...`) in a new page of
 * `browser` with the viewport `size` (default 1280x800).
 */
export async function openConsole(
  browser: Browser,
  url: string,
  size: { width: number; height: number } = { width: 1280, height: 800 },
): Promise<ConsolePage> {
  const origin = new URL(url).origin;
  const page = await browser.newPage({ viewport: size });
  const errors: string[] = [];
  const foreign: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("request", (request) => {
    const target = request.url();
    if (!target.startsWith("data:") && new URL(target).origin !== origin) foreign.push(target);
  });
  await page.goto(url);
  return {
    page,
    errors,
    foreign,
    async screenshot(name: string) {
      mkdirSync(ARTIFACTS_DIR, { recursive: true });
      const path = resolve(ARTIFACTS_DIR, `${name}.png`);
      await page.screenshot({ path, fullPage: true });
      return path;
    },
  };
}
