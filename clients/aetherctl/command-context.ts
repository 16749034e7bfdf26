/**
 * What every aetherctl command runs with: the registrar client, the global
 * options, where to write, whether to use colour, the clock, and the signal
 * that Ctrl-C aborts. Commands get it from `runAetherctl`, so that they are
 * free of process globals.
 */
import type { CallOptions } from "@connectrpc/connect";
import type { SignatureCheck } from "../../services/common/signature-check.js";
import type { GlobalOptions } from "./aetherctl-flags.js";
import type { BrowserOpener } from "./dashboard/open-browser.js";
import type { RegistrarClient } from "./registrar-client.js";

/** The environment of one command. */
export interface CommandContext {
  /** The generated ConfigService client for `global.registrar`. */
  readonly client: RegistrarClient;
  /** The global options. */
  readonly global: GlobalOptions;
  /** Writes to standard output. */
  readonly stdout: (text: string) => void;
  /** Writes to standard error. */
  readonly stderr: (text: string) => void;
  /** Whether tables may use colour (standard output is a terminal and NO_COLOR is unset). */
  readonly color: boolean;
  /** The current time in milliseconds since the epoch. */
  readonly now: () => number;
  /** Aborted when the user interrupts (Ctrl-C) or the process is asked to stop. */
  readonly signal: AbortSignal;
  /** The `--origin-keys` check `get` and `list` report signatures with; undefined: not checked. */
  readonly signatures: SignatureCheck | undefined;
  /** What `dashboard --open` opens its URL with; undefined: the platform's opener. */
  readonly openBrowser?: BrowserOpener;
}

/** The call options of a unary call: the `--timeout` deadline and the interrupt signal. */
export function unaryCallOptions(context: CommandContext): CallOptions {
  return { timeoutMs: context.global.timeoutMs, signal: context.signal };
}
