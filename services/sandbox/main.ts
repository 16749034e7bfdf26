/**
 * The sandbox (`npm start`): parses flags, starts the whole topology in this
 * process (see `sandbox.ts`), prints where to look, and stops everything on
 * SIGINT, SIGTERM or SIGHUP, or when its parent process is gone (exit 0). A
 * second signal exits at once (130).
 */
import { parseCommandLine, runMain } from "../process/command-line.js";
import { createLogger } from "../runtime/logger.js";
import { createSandbox } from "./sandbox.js";
import { formatBanner } from "./sandbox-banner.js";
import { parseSandboxFlags, SANDBOX_USAGE } from "./sandbox-flags.js";

/** How long stopping may take before the process exits anyway. */
const STOP_TIMEOUT_MS = 20_000;

/** The signals that stop the sandbox; a second one exits at once. */
const STOP_SIGNALS: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

const print = (line: string) => process.stdout.write(`${line}\n`);

/**
 * Calls `onGone` once the parent process is gone: `npm start` stopped by a
 * signal to npm alone ends its shell but not this process, which would
 * otherwise keep running, orphaned. Node has no event for it, so the parent
 * id is checked every second (the timer does not keep the process alive).
 */
function watchParent(onGone: () => void): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone();
  }, 1_000);
  timer.unref();
}

async function main(argv: readonly string[]): Promise<number> {
  const commandLine = parseCommandLine("aether-sandbox", SANDBOX_USAGE, () =>
    parseSandboxFlags(argv),
  );
  if ("exitCode" in commandLine) return commandLine.exitCode;
  const config = commandLine.config;
  const sandbox = createSandbox({
    config,
    print,
    logger: (base) => createLogger({ level: config.logLevel, base }),
  });
  const signalled = new Promise<string>((resolve) => {
    const onSignal = (reason: string) => {
      for (const signal of STOP_SIGNALS) {
        process.removeListener(signal, onSignal);
        process.once(signal, () => process.exit(130));
      }
      resolve(reason);
    };
    for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
    watchParent(() => onSignal("parent process gone"));
  });
  process.on("unhandledRejection", (reason) => {
    process.stderr.write(`aether-sandbox: unhandled rejection (ignored): ${String(reason)}\n`);
  });

  let code = 0;
  const outcome = await Promise.race([
    sandbox.start().then(
      (info) => ({ info }),
      (error: unknown) => ({ error }),
    ),
    signalled.then((reason) => ({ reason })),
  ]);
  if ("error" in outcome) {
    const message = outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
    const hint =
      (outcome.error as { code?: unknown } | undefined)?.code === "EADDRINUSE"
        ? " (is another sandbox running? --base-port N picks other ports, --base-port 0 free ones)"
        : "";
    process.stderr.write(`aether-sandbox: cannot start: ${message}${hint}\n`);
    code = 1;
  } else {
    if ("info" in outcome) {
      for (const line of formatBanner(outcome.info, process.cwd())) print(line);
    }
    print(`${await signalled}: stopping the agents and registrars`);
  }
  const force = setTimeout(() => {
    process.stderr.write(`aether-sandbox: not stopped after ${STOP_TIMEOUT_MS / 1000}s; exiting\n`);
    process.exit(1);
  }, STOP_TIMEOUT_MS);
  force.unref();
  await sandbox.stop();
  if (code === 0) print("stopped");
  return code;
}

runMain("aether-sandbox", main);
