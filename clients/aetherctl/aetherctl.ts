/**
 * Runs one aetherctl command line: parses it, prints help or usage errors,
 * dispatches to the command, and turns failures into the documented exit
 * codes (0 ok, 1 the call failed (or `dashboard` could not listen), 2 bad usage, 3 `status
 * --fail-on-rejections` found problems, 130 interrupted). Free of process
 * globals, so tests can run it in-process; `main.ts` wires it to the process.
 */

import type { SignatureCheck } from "../../services/common/signature-check.js";
import { UsageError } from "../../services/process/usage-error.js";
import { type ClientTlsOptions, clientTlsOptions } from "../../services/runtime/tls/client-tls.js";
import { loadTlsMaterial } from "../../services/runtime/tls/material-read.js";
import type { GlobalOptions } from "./aetherctl-flags.js";
import {
  type Command,
  GLOBAL_VALUE_FLAGS,
  parseAetherctlFlags,
  usageOf,
} from "./aetherctl-flags.js";
import type { CommandContext } from "./command-context.js";
import { runDashboard } from "./commands/dashboard.js";
import { runEtcdRbac } from "./commands/etcd-rbac.js";
import { runExplain } from "./commands/explain.js";
import { runFleet } from "./commands/fleet.js";
import { runGet } from "./commands/get.js";
import { runList } from "./commands/list.js";
import { runStatus } from "./commands/status.js";
import { runWatch } from "./commands/watch.js";
import type { BrowserOpener } from "./dashboard/open-browser.js";
import { describeCallError } from "./error-message.js";
import { isEtcdRbacCommandLine } from "./etcd-rbac-flags.js";
import { loadOriginKeysCheck } from "./origin-keys-file.js";
import { createRegistrarClient } from "./registrar-client.js";

/** Exit code: the command line could not be run. */
export const EXIT_USAGE = 2;
/** Exit code: a call to the registrar failed. */
export const EXIT_FAILURE = 1;
/** Exit code: a unary command was interrupted (128 + SIGINT). */
export const EXIT_INTERRUPTED = 130;

/** The process around a run: streams, environment, terminal, clock and interrupt signal. */
export interface AetherctlIo {
  /** Writes to standard output. */
  readonly stdout: (text: string) => void;
  /** Writes to standard error. */
  readonly stderr: (text: string) => void;
  /** The environment (`AETHER_REGISTRAR`, the TLS defaults of tls-env.ts, `NO_COLOR`). */
  readonly env: NodeJS.ProcessEnv;
  /** Whether standard output is a terminal (colour is used only then). */
  readonly isTty: boolean;
  /** The current time in milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
  /** Aborted on Ctrl-C; default never. */
  readonly signal?: AbortSignal;
  /** What `dashboard --open` opens its URL with; default the platform's opener. */
  readonly openBrowser?: BrowserOpener;
}

function dispatch(context: CommandContext, command: Command): Promise<number> {
  switch (command.name) {
    case "list":
      return runList(context, command);
    case "get":
      return runGet(context, command);
    case "watch":
      return runWatch(context, command);
    case "explain":
      return runExplain(context, command);
    case "status":
      return runStatus(context, command);
    case "fleet":
      return runFleet(context, command);
    case "dashboard":
      return runDashboard(context, command);
  }
}

/**
 * The TLS options of `global.tls` (its files read once), undefined without
 * TLS; rejects with the files' problems (missing, unreadable, a key that is
 * not the certificate's) in one message that quotes no key.
 */
async function loadClientTls(global: GlobalOptions): Promise<ClientTlsOptions | undefined> {
  const tls = global.tls;
  if (tls === undefined) return undefined;
  const material = await loadTlsMaterial(tls);
  return clientTlsOptions(() => material, tls.registrarSpiffeId);
}

/** The `--origin-keys` check of `get` and `list`; rejects with a UsageError for a bad file. */
async function loadSignatures(command: Command): Promise<SignatureCheck | undefined> {
  if (command.name !== "get" && command.name !== "list") return undefined;
  if (command.originKeys === undefined) return undefined;
  return await loadOriginKeysCheck(command.originKeys, command.name);
}

/** Runs aetherctl with `argv` (without `node` and the script); resolves with the exit code. */
export async function runAetherctl(argv: readonly string[], io: AetherctlIo): Promise<number> {
  // etcd-rbac talks to etcd, not to a registrar: its own flags, no registrar client.
  if (isEtcdRbacCommandLine(argv, GLOBAL_VALUE_FLAGS)) return runEtcdRbac(argv, io);
  let line: ReturnType<typeof parseAetherctlFlags>;
  let signatures: SignatureCheck | undefined;
  try {
    line = parseAetherctlFlags(argv, io.env);
    if (line.kind === "help") {
      io.stdout(usageOf(line.command));
      return 0;
    }
    signatures = await loadSignatures(line.command);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr(`aetherctl: ${error.message}\n\n${usageOf(error.command)}`);
    return EXIT_USAGE;
  }
  const signal = io.signal ?? new AbortController().signal;
  let tlsOptions: ClientTlsOptions | undefined;
  try {
    tlsOptions = await loadClientTls(line.global);
  } catch (error) {
    io.stderr(`aetherctl: ${(error as Error).message}\n`);
    return EXIT_FAILURE;
  }
  const context: CommandContext = {
    client: createRegistrarClient(line.global.registrar, tlsOptions),
    global: line.global,
    stdout: io.stdout,
    stderr: io.stderr,
    color: io.isTty && !io.env.NO_COLOR && io.env.TERM !== "dumb",
    now: io.now ?? Date.now,
    signal,
    signatures,
    ...(io.openBrowser === undefined ? {} : { openBrowser: io.openBrowser }),
  };
  try {
    return await dispatch(context, line.command);
  } catch (error) {
    if (signal.aborted) return EXIT_INTERRUPTED;
    io.stderr(describeCallError(error, line.global.registrar, tlsOptions !== undefined));
    return EXIT_FAILURE;
  }
}
