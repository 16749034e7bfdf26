/**
 * Runs aetherctl's command line in the test process (`runAetherctl`, what
 * `main.ts` runs) with no environment (or the one given), no terminal and
 * the browser opener given (or the platform's), collecting its
 * output: a tsx process per call would cost seconds.
 */
import { runAetherctl } from "../../clients/aetherctl/aetherctl.js";
import type { BrowserOpener } from "../../clients/aetherctl/dashboard/open-browser.js";

/** What one run printed and its exit code. */
export interface AetherctlRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs aetherctl with `args` to completion; `signal` is its Ctrl-C, and
 * `onStdout` (`onStderr`) sees everything printed so far on stdout (stderr)
 * after each write.
 */
export async function runAetherctlInProcess(
  args: readonly string[],
  options: {
    signal?: AbortSignal;
    onStdout?: (printed: string) => void;
    onStderr?: (printed: string) => void;
    env?: NodeJS.ProcessEnv;
    openBrowser?: BrowserOpener;
  } = {},
): Promise<AetherctlRun> {
  let stdout = "";
  let stderr = "";
  const code = await runAetherctl(args, {
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.openBrowser === undefined ? {} : { openBrowser: options.openBrowser }),
    stdout: (text) => {
      stdout += text;
      options.onStdout?.(stdout);
    },
    stderr: (text) => {
      stderr += text;
      options.onStderr?.(stderr);
    },
    env: options.env ?? {},
    isTty: false,
  });
  return { code, stdout, stderr };
}
