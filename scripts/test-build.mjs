#!/usr/bin/env node
// Transpiles the registrar's, the agent's, aetherctl's and the sandbox's
// TypeScript (gen/, services/, clients/ but the console) to JavaScript for the
// tests' OS processes: a process started from compiled JS is ready in a
// fraction of the time `node --import tsx` takes (tsx compiles every module
// again in every process). esbuild transpiles file by file (no bundling, no
// type check: `tsc --noEmit` does that), keeping the tree's layout, so
// relative imports, `import.meta.dirname` and worker modules
// (`siblingModule`) resolve as they do from source.
//
// The output goes to .cache/test-build/<hash>/ (git-ignored), where <hash> is
// a SHA-256 over the inputs (every file under INPUTS, package-lock.json,
// tsconfig.json and this script): changed sources get a new directory, so a
// test never runs stale code, and two concurrent runs never write into the
// directory the other one runs. A build goes to a temporary directory renamed
// into place. Prints the directory on stdout.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { filesUnder, hashFiles } from "./source-hash.mjs";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));
const cache = join(root, ".cache/test-build");
/** The source trees compiled (clients/console is Vite's, see console-build.mjs). */
const INPUTS = ["gen", "services", "clients"];
const EXCLUDED = ["clients/console/"];
/** Files that change what the build makes without being compiled. */
const CONFIG = [
  "package-lock.json",
  "tsconfig.json",
  "scripts/test-build.mjs",
  "scripts/source-hash.mjs",
];
/**
 * Paths the compiled modules reach relative to their own location (the
 * sandbox's default `--examples`, aetherctl dashboard's default `--assets`):
 * linked to the repository's.
 */
const LINKED = ["examples", "clients/console/dist"];
/** Build directories of other source versions older than this are removed. */
const PRUNE_AFTER_MS = 60 * 60 * 1000;

/** Every file under `path` but the excluded trees. */
function files(path) {
  return filesUnder(root, path).filter((file) => !EXCLUDED.some((p) => file.startsWith(p)));
}

const sources = INPUTS.flatMap(files);
const wanted = hashFiles(root, [...sources, ...CONFIG.flatMap(files)]).slice(0, 16);
const out = join(cache, wanted);

if (!existsSync(out)) {
  const { build } = await import("esbuild");
  const temporary = `${out}.tmp-${process.pid}`;
  const started = Date.now();
  try {
    await build({
      entryPoints: sources.filter((file) => file.endsWith(".ts")).map((file) => join(root, file)),
      outbase: root,
      outdir: temporary,
      format: "esm",
      platform: "node",
      target: "node20",
      tsconfig: join(root, "tsconfig.json"),
      logLevel: "warning",
    });
    for (const path of LINKED) {
      mkdirSync(dirname(join(temporary, path)), { recursive: true });
      symlinkSync(join(root, path), join(temporary, path));
    }
    try {
      renameSync(temporary, out);
    } catch (error) {
      // Another run built the same sources meanwhile: keep its directory.
      if (!existsSync(out)) throw error;
    }
  } finally {
    rmSync(temporary, { recursive: true, force: true });
  }
  for (const entry of readdirSync(cache)) {
    const path = join(cache, entry);
    if (entry !== wanted && Date.now() - statSync(path).mtimeMs > PRUNE_AFTER_MS) {
      rmSync(path, { recursive: true, force: true });
    }
  }
  process.stderr.write(
    `sources compiled into ${relative(root, out)}/ in ${Date.now() - started} ms\n`,
  );
}
process.stdout.write(`${out}\n`);
