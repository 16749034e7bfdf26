import { defineConfig } from "vitest/config";

export default defineConfig({
  // The console's components (clients/console) are Preact JSX.
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  test: {
    include: ["test/**/*.test.ts", "clients/console/test/**/*.test.{ts,tsx}"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // A worker keeps its modules from one test file to the next instead of importing them
    // again for each (test/unit alone: 161 s and 98 CPU-s isolated, 85 s and 35 CPU-s not).
    isolate: false,
    // Builds the console once (when its sources changed) for the dashboard and browser tests,
    // and compiles the sources the tests start as OS processes (see test/support/process-entry.ts).
    globalSetup: ["test/support/console-build.ts", "test/support/test-build.ts"],
  },
});
