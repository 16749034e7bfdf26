/**
 * Runs aetherctl's command line in the test process (`runAetherctl`, what
 * `main.ts` runs) with no environment (or the one given) and no terminal, collecting its
 * output: a tsx process per call would cost seconds.
 */
import { runAetherctl } from "../../clients/aetherctl/aetherctl.js";

/** What one run printed and its exit code. */
export interface AetherctlRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs aetherctl with `args` to completion; `signal` is its Ctrl-C, and
 * `onStdout` sees everything printed so far after each write.
 */
export async function runAetherctlInProcess(
  args: readonly string[],
  options: {
    signal?: AbortSignal;
    onStdout?: (printed: string) => void;
    env?: NodeJS.ProcessEnv;
  } = {},
): Promise<AetherctlRun> {
  let stdout = "";
  let stderr = "";
  const code = await runAetherctl(args, {
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    stdout: (text) => {
      stdout += text;
      options.onStdout?.(stdout);
    },
    stderr: (text) => {
      stderr += text;
    },
    env: options.env ?? {},
    isTty: false,
  });
  return { code, stdout, stderr };
}
