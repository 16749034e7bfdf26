/**
 * `aetherctl`: inspects a registrar's routing-config channel (list, get,
 * watch, explain, status) through the generated ConfigService client. Wires
 * {@link runAetherctl} to the process: stdout and stderr, the environment,
 * Ctrl-C (SIGINT, and SIGTERM) as an abort signal, and the exit code.
 */
import { runAetherctl } from "./aetherctl.js";

const interrupt = new AbortController();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => interrupt.abort());
}
// A reader that goes away (`aetherctl watch | head`) is not an error.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

runAetherctl(process.argv.slice(2), {
  stdout: (text) => {
    process.stdout.write(text);
  },
  stderr: (text) => {
    process.stderr.write(text);
  },
  env: process.env,
  isTty: process.stdout.isTTY === true,
  signal: interrupt.signal,
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(
      `aetherctl: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
