/**
 * Vitest's global setup: compiles the sources the tests run as OS processes
 * (`scripts/test-build.mjs`, esbuild, about a second; a no-op when the
 * sources did not change) and tells the test workers where the output is
 * (the {@link TEST_BUILD_ENV} variable), so the process helpers start
 * compiled JavaScript instead of `node --import tsx` (see process-entry.ts).
 * In watch mode it compiles again before each rerun.
 */
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import type { TestProject } from "vitest/node";
import { TEST_BUILD_ENV } from "./process-entry.js";

const ROOT = resolve(import.meta.dirname, "../..");

/** Compiles the sources (when they changed) and publishes the output's directory. */
async function build(): Promise<void> {
  const { stdout } = await promisify(execFile)(process.execPath, ["scripts/test-build.mjs"], {
    cwd: ROOT,
    timeout: 120_000,
  });
  process.env[TEST_BUILD_ENV] = stdout.trim();
}

/** Builds before the first test file runs, and again before each watch-mode rerun. */
export default async function setup(project: TestProject): Promise<void> {
  await build();
  project.onTestsRerun(build);
}
