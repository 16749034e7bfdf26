/**
 * `aetherctl dashboard`: serves the console and its ConfigService gateway
 * (`dashboard/dashboard-server.ts`) until the user interrupts it, then
 * closes cleanly (exit 0). It prints the URL on stdout, warns on stderr when
 * the address is not loopback, checks once whether the registrar answers
 * (GetConfigStatus) and says so, serving either way, and with `--open`
 * opens the URL in the browser (best effort).
 */
import { Code, type ConnectError } from "@connectrpc/connect";
import type { CommandContext } from "../command-context.js";
import type { DashboardCommand } from "../dashboard/dashboard-flags.js";
import { createDashboardServer } from "../dashboard/dashboard-server.js";
import { openInBrowser } from "../dashboard/open-browser.js";
import { isLoopbackHost } from "../dashboard/request-checks.js";
import { describeCallError } from "../error-message.js";

/** The line `dashboard` warns with when it listens on an address other than loopback. */
export function exposedWarning(host: string): string {
  return `aetherctl: warning: listening on ${host}, not loopback: anyone who can reach it calls the registrar with your identity\n`;
}

/** Resolves when `signal` is aborted (at once when it already is). */
function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(), { once: true }),
  );
}

/** Says on stderr whether the registrar answers GetConfigStatus; never throws. */
async function checkRegistrar(context: CommandContext): Promise<void> {
  const { registrar, tls } = context.global;
  try {
    const status = await context.client.getConfigStatus(
      {},
      { timeoutMs: context.global.timeoutMs, signal: context.signal },
    );
    context.stderr(`aetherctl: registrar ${registrar} answers (cluster ${status.cluster})\n`);
  } catch (error) {
    if (context.signal.aborted) return;
    const line = describeCallError(error, registrar, tls !== undefined).replace(/^aetherctl: /, "");
    context.stderr(
      `aetherctl: registrar ${registrar} does not answer (serving anyway; the console will show the errors): ${line}`,
    );
  }
}

/** Runs `aetherctl dashboard`; resolves with the exit code once interrupted. */
export async function runDashboard(
  context: CommandContext,
  command: DashboardCommand,
): Promise<number> {
  const { registrar, tls } = context.global;
  // A failure before the registrar answered gets aetherctl's own one-line explanation.
  const describeFailure = (error: ConnectError) =>
    error.code === Code.Unavailable || error.code === Code.DeadlineExceeded
      ? describeCallError(error, registrar, tls !== undefined)
          .replace(/^aetherctl: [a-z_]+: /, "")
          .trimEnd()
      : undefined;
  const server = createDashboardServer({
    client: context.client,
    timeoutMs: context.global.timeoutMs,
    describeFailure,
    assetsDir: command.assetsDir,
    host: command.host,
    port: command.port,
    agents: command.agents,
  });
  let url: string;
  try {
    url = await server.start();
  } catch (error) {
    context.stderr(
      `aetherctl: dashboard: cannot listen on ${command.host}:${command.port}: ${(error as Error).message}\n`,
    );
    return 1;
  }
  try {
    if (!isLoopbackHost(command.host)) context.stderr(exposedWarning(command.host));
    context.stdout(`aetherctl dashboard: serving ${url} (Ctrl-C stops)\n`);
    if (command.open) {
      void (context.openBrowser ?? openInBrowser)(url).then((problem) => {
        if (problem !== undefined) {
          context.stderr(`aetherctl: could not open a browser (${problem}); open ${url}\n`);
        }
      });
    }
    await checkRegistrar(context);
    await aborted(context.signal);
  } finally {
    await server.close();
  }
  return 0;
}
