/**
 * Runs aetherctl's command line in the test process (`runAetherctl`, what
 * `main.ts` runs) with no environment and no terminal, collecting its
 * output: a tsx process per call would cost seconds.
 */
import { runAetherctl } from "../../clients/aetherctl/aetherctl.js";

/** What one run printed and its exit code. */
export interface AetherctlRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs aetherctl with `args` to completion. */
export async function runAetherctlInProcess(args: readonly string[]): Promise<AetherctlRun> {
  let stdout = "";
  let stderr = "";
  const code = await runAetherctl(args, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    env: {},
    isTty: false,
  });
  return { code, stdout, stderr };
}
