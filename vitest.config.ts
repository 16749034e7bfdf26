import { defineConfig } from "vitest/config";

export default defineConfig({
  // The console's components (clients/console) are Preact JSX.
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  test: {
    include: ["test/**/*.test.ts", "clients/console/test/**/*.test.{ts,tsx}"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Builds the console once (when its sources changed) for the dashboard and browser tests,
    // and compiles the sources the tests start as OS processes (see test/support/process-entry.ts).
    globalSetup: ["test/support/console-build.ts", "test/support/test-build.ts"],
  },
});
