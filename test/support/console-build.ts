/**
 * Vitest's global setup: builds the console (`scripts/console-build.mjs
 * --if-stale`, a no-op when its sources did not change) once before any test
 * file runs, so the browser tests and the dashboard serve the current
 * `clients/console/dist/`.
 */
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";

const ROOT = resolve(import.meta.dirname, "../..");

/** The built console, what `aetherctl dashboard --assets` serves. */
export const CONSOLE_DIST = resolve(ROOT, "clients/console/dist");

/** Builds the console when its sources changed since the last build. */
export default async function setup(): Promise<void> {
  await promisify(execFile)(process.execPath, ["scripts/console-build.mjs", "--if-stale"], {
    cwd: ROOT,
    timeout: 120_000,
  });
}
