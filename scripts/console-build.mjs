#!/usr/bin/env node
// Builds the console (clients/console, Vite) into clients/console/dist/, what
// `aetherctl dashboard` serves. With --if-stale it builds only when the
// sources changed since the last build: a SHA-256 over the console's sources,
// the generated contract, services/common (bundled for the explain view) and
// package-lock.json, kept in dist/.source-hash. The build goes to a temporary
// directory renamed into place, so a concurrent build (two test runs, a test
// run and `npm start`) never leaves a half-written dist/.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { filesUnder, hashFiles } from "./source-hash.mjs";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));
const consoleDir = join(root, "clients/console");
const dist = join(consoleDir, "dist");
const INPUTS = [
  "clients/console/src",
  "clients/console/index.html",
  "clients/console/vite.config.ts",
  "gen",
  "services/common",
  "package-lock.json",
];

/** The hash of the build's inputs. */
function sourceHash() {
  return hashFiles(
    root,
    INPUTS.flatMap((input) => filesUnder(root, input)),
  );
}

const ifStale = process.argv.includes("--if-stale");
const wanted = sourceHash();
const stamp = join(dist, ".source-hash");
if (ifStale && existsSync(stamp) && readFileSync(stamp, "utf8") === wanted) process.exit(0);

const { build } = await import("vite");
const temporary = `${dist}.tmp-${process.pid}`;
const started = Date.now();
try {
  process.env.AETHER_CONSOLE_OUT_DIR = temporary;
  await build({ configFile: join(consoleDir, "vite.config.ts"), logLevel: "warn" });
  writeFileSync(join(temporary, ".source-hash"), wanted);
  // Replace dist/ whole: move the old one aside, then the new one in.
  const old = `${dist}.old-${process.pid}`;
  if (existsSync(dist)) renameSync(dist, old);
  try {
    renameSync(temporary, dist);
  } catch (error) {
    // Another build put its dist/ in place meanwhile: keep it.
    if (!existsSync(dist)) throw error;
  }
  rmSync(old, { recursive: true, force: true });
  process.stderr.write(
    `console built into ${relative(root, dist)}/ in ${Date.now() - started} ms\n`,
  );
} finally {
  rmSync(temporary, { recursive: true, force: true });
}
