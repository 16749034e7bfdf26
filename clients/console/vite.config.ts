/**
 * The console's Vite build: `npm run console:build` writes
 * `clients/console/dist/` (what `aetherctl dashboard` serves). Everything is
 * bundled (no CDN), hashed under `assets/`, and JSX is Preact's.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const root = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root,
  base: "/",
  logLevel: "warn",
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: {
    outDir: process.env.AETHER_CONSOLE_OUT_DIR ?? "dist",
    emptyOutDir: true,
    target: "es2022",
    // Inline nothing: the dashboard's CSP allows only its own files.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});
