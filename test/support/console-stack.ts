/**
 * The console's browser tests' stack: an in-process registrar, `aetherctl
 * dashboard` in front of it serving the built console, and headless
 * Chromium; stopped in the reverse order.
 */
import type { Browser } from "playwright-core";
import type { ConfigStore } from "../../services/registrar/store/config-store.js";
import { launchBrowser } from "./browser.js";
import { CONSOLE_DIST } from "./console-build.js";
import { type RunningDashboard, startDashboard } from "./dashboard-run.js";
import { startTestRegistrar, type TestRegistrar } from "./in-process-registrar.js";

/** A running registrar, dashboard and browser. */
export interface ConsoleStack {
  readonly registrar: TestRegistrar;
  readonly dashboard: RunningDashboard;
  readonly browser: Browser;
  /** Closes the browser, stops the dashboard, then the registrar. */
  stop(): Promise<void>;
}

/**
 * Starts a registrar with `registrarFlags` (over `options.store` when
 * given), the dashboard for it serving {@link CONSOLE_DIST}, and Chromium.
 */
export async function startConsoleStack(
  registrarFlags: readonly string[],
  options: { store?: ConfigStore } = {},
): Promise<ConsoleStack> {
  const registrar = await startTestRegistrar(registrarFlags, options);
  const dashboard = await startDashboard(["--registrar", registrar.url, "--assets", CONSOLE_DIST]);
  const browser = await launchBrowser();
  return {
    registrar,
    dashboard,
    browser,
    async stop() {
      await browser.close();
      await dashboard.stop();
      await registrar.stop();
    },
  };
}
