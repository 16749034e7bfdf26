/**
 * How the tests start a TypeScript main (registrar, agent, sandbox,
 * aetherctl) as an OS process: its compiled JavaScript when vitest's global
 * setup compiled the sources (test-build.ts), which is ready in a fraction of
 * the time; else, or when a test asks for it, the sources through
 * `node --import tsx`, as the package scripts and `bin/` run them.
 */
import { relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");

/** The environment variable holding the compiled tree's directory (set by test-build.ts). */
export const TEST_BUILD_ENV = "AETHER_TEST_BUILD";

/**
 * The `node` arguments that run `main` (a `.ts` file under the repository,
 * absolute): `[compiled.js]` when the tests' build exists and `tsx` is not
 * true, else `["--import", "tsx", main]`.
 */
export function mainEntry(main: string, options: { tsx?: boolean } = {}): string[] {
  const build = process.env[TEST_BUILD_ENV];
  if (build === undefined || build === "" || options.tsx === true) {
    return ["--import", "tsx", main];
  }
  return [resolve(build, relative(ROOT, main).replace(/\.ts$/, ".js"))];
}
