/**
 * `aetherctl dashboard`'s flags: `--listen HOST:PORT` (default
 * 127.0.0.1:7070), `--open`, `--assets DIR` (default: the console's
 * build output in this checkout, {@link DEFAULT_ASSETS_DIR}) and `--agent
 * NAME=URL`, repeatable (`dashboard-agents.ts`). Pure.
 */
import { fileURLToPath } from "node:url";
import { parseListenFlag } from "../../../services/process/flag-values.js";
import { UsageError } from "../../../services/process/usage-error.js";
import { parseAgentFlags } from "./dashboard-agents.js";

/** `aetherctl dashboard`. */
export interface DashboardCommand {
  /** The command's name. */
  readonly name: "dashboard";
  /** The address to listen on (IPv6 without brackets). */
  readonly host: string;
  /** The port to listen on; 0 picks a free one. */
  readonly port: number;
  /** Open the URL in the default browser once listening. */
  readonly open: boolean;
  /** The directory of the console's built assets. */
  readonly assetsDir: string;
  /** The agents whose route tables the console may read, name → admin base URL. */
  readonly agents: ReadonlyMap<string, string>;
}

/** Where the console's build (Vite's output) lands: `clients/console/dist/` of this checkout. */
export const DEFAULT_ASSETS_DIR = fileURLToPath(new URL("../../console/dist/", import.meta.url));

/** The default of `--listen`. */
export const DEFAULT_DASHBOARD_LISTEN = "127.0.0.1:7070";

/** The options of `dashboard` for `node:util`'s parseArgs. */
export const DASHBOARD_OPTIONS = {
  listen: { type: "string" },
  open: { type: "boolean" },
  assets: { type: "string" },
  agent: { type: "string", multiple: true },
} as const;

/** The body of `dashboard --help` (the global flags follow it). */
export const DASHBOARD_USAGE = `Usage: aetherctl dashboard [--listen HOST:PORT] [--open] [--assets DIR]
                          [--agent NAME=URL]...

Serves the console on this machine and forwards its ConfigService calls to
the registrar with aetherctl's own connection settings (--registrar, and the
TLS certificate, bundles and registrar SPIFFE ID below), as kubectl proxy
does: the registrar opens no new port and the browser holds no credentials.
It prints the URL, checks once whether the registrar answers (and serves
either way), and serves until Ctrl-C.

Forwarded: ListConfig, ListAllConfig, WatchConfig, GetConfigStatus and
GetFleetStatus (the Connect protocol, JSON or binary, and gRPC-Web, over
HTTP/1.1); ReportAppliedConfig is refused (permission_denied). Requests
whose Host is not this address (DNS rebinding) get 421, API calls from
another origin 403. While the assets directory does not exist, / says the
console is not built; the API works all the same.

With --agent NAME=URL (repeatable) the console's Explain view can also
decide as that agent does: GET /agents lists the names, GET
/agents/NAME/routes reads the agent's GET URL/routes (within --timeout, at
most 16 MiB) and answers its route table, or 502 with the reason.

Flags:
  --listen HOST:PORT  where to listen (default ${DEFAULT_DASHBOARD_LISTEN}); an address other
                      than loopback is allowed with a warning: whoever reaches it
                      calls the registrar as you
  --open              open the URL in the default browser
  --assets DIR        the console's built assets (default clients/console/dist/)
  --agent NAME=URL    an agent's admin base URL (as explain --agent takes it) under
                      a name (its cluster's); repeatable, each name once
`;

/** Parses `dashboard`'s values (from parseArgs) and positionals (there must be none). */
export function parseDashboardCommand(
  values: Record<string, unknown>,
  positionals: readonly string[],
): DashboardCommand {
  if (positionals.length > 0) {
    throw new UsageError(
      `dashboard takes no arguments (got ${positionals.join(" ")})`,
      "dashboard",
    );
  }
  let listen: { host: string; port: number };
  try {
    listen = parseListenFlag(
      (values.listen as string | undefined) ?? DEFAULT_DASHBOARD_LISTEN,
      DEFAULT_DASHBOARD_LISTEN,
    );
  } catch (error) {
    throw new UsageError((error as Error).message, "dashboard");
  }
  const assets = values.assets as string | undefined;
  if (assets === "") throw new UsageError("--assets needs a directory", "dashboard");
  return {
    name: "dashboard",
    ...listen,
    open: values.open === true,
    assetsDir: assets ?? DEFAULT_ASSETS_DIR,
    agents: parseAgentFlags(values.agent as string[] | undefined),
  };
}
