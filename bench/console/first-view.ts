/**
 * The console's first view in headless Chromium: each load in a fresh
 * browser context (an empty cache, as a first visit), navigating to the
 * Fleet view and timing navigation start to the frame in which
 * `section.fleet[data-state=ready]` holds every expected row
 * (`performance.now()` in the page, whose origin is the navigation's start;
 * checked every animation frame).
 */
import { type Browser, chromium } from "playwright-core";

/** One load's figures. */
export interface FirstViewLoad {
  /** Navigation start to the ready frame, in milliseconds. */
  readonly ms: number;
  /** The fleet rows (`tr[data-service]`) rendered then. */
  readonly rows: number;
}

/** How long one load may take before the run fails. */
const LOAD_TIMEOUT_MS = 60_000;

/** Launches headless Chromium (`$AETHER_CHROMIUM` or /usr/bin/chromium). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.AETHER_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}

/** The little of the page's DOM the check reads (this project's types have no DOM). */
interface PageGlobals {
  readonly document: {
    querySelector(selector: string): {
      querySelectorAll(selector: string): { readonly length: number };
    } | null;
  };
  readonly performance: { now(): number };
}

/**
 * The page-side check, run in the page every animation frame: the time and
 * rows once the Fleet view is ready with `rows` rows, else false. A function,
 * not a string: the dashboard's CSP forbids eval.
 */
function readyCheck(rows: number): FirstViewLoad | false {
  const { document, performance } = globalThis as unknown as PageGlobals;
  const section = document.querySelector('section.fleet[data-state="ready"]');
  if (section === null) return false;
  const count = section.querySelectorAll("tr[data-service]").length;
  return count >= rows ? { ms: performance.now(), rows: count } : false;
}

/**
 * Loads `url` + `#/fleet` once in a fresh context of `browser` (1280x800)
 * and resolves with the time to the Fleet view ready with `rows` rows.
 */
export async function loadFirstView(
  browser: Browser,
  url: string,
  rows: number,
): Promise<FirstViewLoad> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const page = await context.newPage();
    await page.goto(`${url}#/fleet`, { waitUntil: "commit" });
    const ready = await page.waitForFunction(readyCheck, rows, {
      polling: "raf",
      timeout: LOAD_TIMEOUT_MS,
    });
    return (await ready.jsonValue()) as FirstViewLoad;
  } finally {
    await context.close();
  }
}
