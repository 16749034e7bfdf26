/**
 * The sandbox (`services/sandbox/`) in this process, quietly, for the
 * console's benchmark and screenshots: on free ports, over an examples
 * directory, with the console built first (`scripts/console-build.mjs
 * --if-stale`); and a generated examples directory of N services (the
 * benchmark's mesh, `bench/scenario.ts`) with the spokes' empty local
 * directories.
 */
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../services/runtime/logger.js";
import { createSandbox, type SandboxInfo } from "../../services/sandbox/sandbox.js";
import { parseSandboxFlags } from "../../services/sandbox/sandbox-flags.js";
import { meshManifests } from "../scenario.js";

/** A running sandbox. */
export interface QuietSandbox {
  readonly info: SandboxInfo;
  /** Stops it (idempotent). */
  stop(): Promise<void>;
}

/** Builds the console when its sources changed since the last build (what the tests' setup runs). */
export { default as buildConsole } from "../../test/support/console-build.js";

/**
 * Starts the sandbox with `args` (sandbox flags; `--base-port 0` is added),
 * its lines and logs (errors only) on stderr; stopped when the start fails.
 */
export async function startQuietSandbox(args: readonly string[]): Promise<QuietSandbox> {
  const config = parseSandboxFlags([...args, "--base-port", "0", "--log-level", "error"]);
  if (config === "help") throw new Error("unexpected --help");
  const sandbox = createSandbox({
    config,
    print: () => {},
    logger: (base) => createLogger({ level: "error", base }),
  });
  try {
    return { info: await sandbox.start(), stop: () => sandbox.stop() };
  } catch (error) {
    await sandbox.stop();
    throw error;
  }
}

/**
 * Writes an examples directory of `services` generated services (under
 * `mesh/`, one file per namespace) and empty `local/east`, `local/west`;
 * resolves with its path (a new temp directory).
 */
export async function writeGeneratedExamples(services: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "aether-console-bench-"));
  await mkdir(join(dir, "mesh"));
  for (const [file, text] of meshManifests(services))
    await writeFile(join(dir, "mesh", file), text);
  await mkdir(join(dir, "local", "east"), { recursive: true });
  await mkdir(join(dir, "local", "west"), { recursive: true });
  return dir;
}
