/**
 * The parts every command-line entry point (registrar, agent, sandbox) shares:
 * turning a flag parser's verdict into help text, a usage error (exit 2) or a
 * configuration, and last-resort handlers that log before a crash.
 */
import type { Logger } from "../runtime/logger.js";
import { UsageError } from "./usage-error.js";

/** What {@link parseCommandLine} decided: run with a configuration, or exit now. */
export type CommandLine<T> = { readonly config: T } | { readonly exitCode: number };

/**
 * Runs `parse`. Returns the configuration it produced; or, after printing the
 * usage text to standard output, exit code 0 when it returned `"help"`; or,
 * after printing `<program>: <message>` and the usage text to standard error,
 * exit code 2 when it threw a {@link UsageError}. Any other error is
 * rethrown.
 */
export function parseCommandLine<T>(
  program: string,
  usage: string,
  parse: () => T | "help",
): CommandLine<T> {
  let parsed: T | "help";
  try {
    parsed = parse();
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`${program}: ${error.message}\n\n${usage}`);
      return { exitCode: 2 };
    }
    throw error;
  }
  if (parsed === "help") {
    process.stdout.write(usage);
    return { exitCode: 0 };
  }
  return { config: parsed };
}

/**
 * Logs an uncaught exception as fatal and exits 1, and logs (and survives) an
 * unhandled promise rejection, so a bug never ends a process silently.
 */
export function installCrashHandlers(logger: Logger): void {
  process.on("uncaughtException", (error) => {
    logger.fatal({ err: error }, "uncaught exception");
    process.exit(1);
  });
  process.on("unhandledRejection", (reason) => {
    logger.error({ err: reason }, "unhandled rejection (ignored)");
  });
}

/**
 * Runs an entry point's `main` with the process's arguments and sets the exit
 * code it resolves with; a rejection is printed as `<program>: <message>`
 * and exits 1.
 */
export function runMain(program: string, main: (argv: string[]) => Promise<number>): void {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(
        `${program}: ${error instanceof Error ? error.message : String(error)}\n`,
      );
      process.exitCode = 1;
    },
  );
}
