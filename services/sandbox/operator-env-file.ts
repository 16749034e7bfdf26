/**
 * Writes the operator's environment file (`operator-env.ts`) at each start:
 * whole or not at all (a temp file renamed over it), so a shell sourcing it
 * while the sandbox starts reads the old file or the new one.
 */
import { rename, rm, writeFile } from "node:fs/promises";
import { operatorEnv } from "./operator-env.js";
import type { SandboxPki } from "./sandbox-pki.js";
import type { SandboxSigning } from "./sandbox-signing.js";

/** Where the file is, and why it was not written (then it is removed). */
export interface OperatorEnvFile {
  readonly file: string;
  readonly problem?: string;
}

/**
 * Writes `pki`'s environment file in its directory (with `signing`'s
 * origin keys as aetherctl's `--origin-keys` default), replacing one of an
 * earlier run; when its paths cannot be listed (`operatorEnv`), removes an
 * earlier run's file instead, so that sourcing it fails rather than set
 * stale paths, and says why.
 */
export async function writeOperatorEnv(
  pki: SandboxPki,
  signing?: SandboxSigning,
): Promise<OperatorEnvFile> {
  const env = operatorEnv(pki, signing?.originKeysFile);
  if ("problem" in env) {
    await rm(env.file, { force: true });
    return { file: env.file, problem: env.problem };
  }
  const temp = `${env.file}.${process.pid}.tmp`;
  try {
    await writeFile(temp, env.text, { mode: 0o644 });
    await rename(temp, env.file);
  } finally {
    await rm(temp, { force: true });
  }
  return { file: env.file };
}
