/**
 * aetherctl's command line: global flags (`--registrar`, `-o`, `--timeout`),
 * the command, and its own flags and arguments, parsed into a validated
 * {@link CommandLine}. Flags may come before or after the command. Every
 * problem is a {@link UsageError} naming the flag or argument and saying
 * what is expected; `main` prints it with the usage text and exits 2.
 */
import { parseArgs } from "node:util";
import { parseDuration } from "../../services/common/duration.js";
import { checkClusterName, checkRecordName } from "../../services/common/service-name.js";
import {
  CLIENT_TLS_OPTIONS,
  CLIENT_TLS_USAGE,
  type ClientTlsConfig,
  type ClientTlsFlagValues,
  parseClientTlsFlags,
} from "../../services/process/client-tls-flags.js";
import { UsageError } from "../../services/process/usage-error.js";
import {
  DASHBOARD_OPTIONS,
  DASHBOARD_USAGE,
  type DashboardCommand,
  parseDashboardCommand,
} from "./dashboard/dashboard-flags.js";
import { buildExplainTarget, type ExplainTarget } from "./explain-request.js";
import { FLEET_OPTIONS, FLEET_USAGE, type FleetCommand, parseFleetCommand } from "./fleet-flags.js";
import { type OriginKeysSource, originKeysSource } from "./origin-keys-file.js";
import { parseRandomFlags, type RandomSource } from "./random-source.js";
import { CLIENT_TLS_ENV_USAGE, withClientTlsEnv } from "./tls-env.js";

/** The registrar aetherctl talks to when neither `--registrar` nor `$AETHER_REGISTRAR` is set. */
export const DEFAULT_REGISTRAR = "http://127.0.0.1:8080";

/** The output formats of `-o`. */
export type OutputFormat = "table" | "json";

/** The options every command takes. */
export interface GlobalOptions {
  /** The registrar's base URL. */
  readonly registrar: string;
  /** `table` (human-readable, the default) or `json` (for scripts). */
  readonly output: OutputFormat;
  /** The deadline of each unary call, in milliseconds. */
  readonly timeoutMs: number;
  /** TLS to an https:// registrar: the client certificate, bundles and the registrar's SPIFFE ID. */
  readonly tls?: ClientTlsConfig;
}

/** `aetherctl list`. */
export interface ListCommand {
  /** The command's name. */
  readonly name: "list";
  /** Only these services; empty means every service. */
  readonly services: readonly string[];
  /** List this origin's projections (ListConfig) instead of a ListAllConfig view. */
  readonly origin: string | undefined;
  /** List every origin's projections (the ALL_ORIGINS view) instead of the effective one. */
  readonly allOrigins: boolean;
  /** The public keys to verify signatures with (`--origin-keys`); undefined: not checked. */
  readonly originKeys: OriginKeysSource | undefined;
}

/** `aetherctl get`. */
export interface GetCommand {
  /** The command's name. */
  readonly name: "get";
  /** The service, `namespace/name`, or `@mesh` (the mesh record). */
  readonly service: string;
  /** Show this origin's projection instead of the effective winner. */
  readonly origin: string | undefined;
  /** The public keys to verify its signature with (`--origin-keys`); undefined: not checked. */
  readonly originKeys: OriginKeysSource | undefined;
}

/** `aetherctl watch`. */
export interface WatchCommand {
  /** The command's name. */
  readonly name: "watch";
  /** Only these services; empty means every service. */
  readonly services: readonly string[];
  /** Watch the ALL_ORIGINS view instead of the effective one. */
  readonly allOrigins: boolean;
  /** Resume after this revision (0: start with a snapshot). */
  readonly resume: bigint;
  /** Whether to print KEEPALIVE events too. */
  readonly keepalives: boolean;
}

/** `aetherctl explain`. */
export interface ExplainCommand {
  /** The command's name. */
  readonly name: "explain";
  /** What to evaluate. */
  readonly target: ExplainTarget;
  /** Evaluate this origin's projection instead of the effective winner. */
  readonly origin: string | undefined;
  /** Evaluate the entry of this agent's route table (its `GET /routes`) instead of asking the registrar. */
  readonly agent: string | undefined;
  /** The evaluator's random source. */
  readonly random: RandomSource;
}

/** `aetherctl status`. */
export interface StatusCommand {
  /** The command's name. */
  readonly name: "status";
  /** Exit 3 when the status reports rejections or source problems. */
  readonly failOnRejections: boolean;
}

export type { DashboardCommand } from "./dashboard/dashboard-flags.js";
export type { FleetCommand } from "./fleet-flags.js";

/** Any command. */
export type Command =
  | ListCommand
  | GetCommand
  | WatchCommand
  | ExplainCommand
  | StatusCommand
  | FleetCommand
  | DashboardCommand;

/** The names of the commands. */
export type CommandName = Command["name"];

/** A parsed command line: help to print, or a command to run. */
export type CommandLine =
  | {
      /** Print the usage of `command` (or the general usage) and exit 0. */
      readonly kind: "help";
      /** The command whose help was asked for; undefined for the general help. */
      readonly command: CommandName | undefined;
    }
  | {
      /** Run `command` with `global`. */
      readonly kind: "run";
      /** The global options. */
      readonly global: GlobalOptions;
      /** The command and its validated arguments. */
      readonly command: Command;
    };

const GLOBAL_FLAGS = `Global flags:
  --registrar URL      the registrar (default $AETHER_REGISTRAR, else ${DEFAULT_REGISTRAR})
  -o, --output FORMAT  table (default) or json
  --timeout DURATION   deadline of each request (default 10s)
  -h, --help           print help
${CLIENT_TLS_USAGE}

${CLIENT_TLS_ENV_USAGE}`;

/** The general `--help` text. */
export const AETHERCTL_USAGE = `Usage: aetherctl [--registrar URL] [-o table|json] COMMAND [flags] [args]

Inspects a registrar's routing-config channel through its ConfigService.

Commands:
  list [--origin NAME | --all-origins] [NS/SVC…]   list projections (default: the effective view)
  get NS/SVC|@mesh [--origin NAME] [--origin-keys PATH]
                                                   show one projection as a tree, with its signer
  watch [NS/SVC…] [--all-origins] [--resume REV]   stream changes until Ctrl-C
  explain --from-namespace NS METHOD URL [-H 'k: v']… [--agent URL]
                                                   decide a request with the shared evaluator
  status [--fail-on-rejections]                    origins, rejections, conflicts, export state
  fleet [--service NS/SVC]… [--cluster NAME]… [--state STATE]… [--limit N]
                                                   every cluster's served versions, agents,
                                                   rejections, skew and drift, worst first
  dashboard [--listen HOST:PORT] [--open]          serve the console on this machine, its
                                                   calls forwarded to the registrar as you
  etcd-rbac --cluster NAME… [--prefix P] [--apply]  each registrar's etcd role and user (talks
                                                   to etcd, not to a registrar; see its --help)

${GLOBAL_FLAGS}

Exit codes: 0 ok, 1 the registrar failed or could not be reached, 2 bad usage,
3 status --fail-on-rejections found problems.
Run 'aetherctl COMMAND --help' for a command's flags.
`;

/** Each command's `--help` text. */
export const COMMAND_USAGE: Readonly<Record<CommandName, string>> = {
  list: `Usage: aetherctl list [--origin NAME | --all-origins] [--origin-keys PATH] [NS/SVC…]

Lists projections, every page of them. By default the EFFECTIVE view: the
trusted origins only, one winner per service (ListAllConfig). --origin lists
what one origin exports (ListConfig); --all-origins lists every stored
projection of every origin, trusted or not (the ALL_ORIGINS view).

Columns: SERVICE ORIGIN VERSION ROUTES RULES AGE SIGNED (AGE is now minus
the version, which is the export time; SIGNED is the signing key's id, or -
when unsigned, followed by "(bad signature)" or "(unknown key)" when it
fails to verify with --origin-keys). -o json prints
{"projections": [...], "revision": "N"} in proto JSON.

Flags:
  --origin NAME       one origin's projections
  --all-origins       every origin's projections
  --origin-keys PATH  verify signatures with the origins' public keys in PATH (YAML
                      or JSON, origins: {NAME: [PEM SPKI, …]}; default
                      $AETHER_ORIGIN_KEYS; without either, signatures are not checked)

${GLOBAL_FLAGS}
`,
  get: `Usage: aetherctl get NS/SVC|@mesh [--origin NAME] [--origin-keys PATH]

Shows one service's projection as a tree of routes, rules, matches, filters,
backends, timeouts and retry policies: by default the effective winner (the
one this registrar's import policy picks), or --origin's. The signed: line
names the key that signed it (its id and algorithm) and whether the signature
verified, checked here with --origin-keys: verified, bad signature, unknown key
(not among the origin's keys in the file), unsigned, or not checked (no
--origin-keys). -o json prints the projection in proto JSON with one more
field, "signatureCheck": {"keyId", "algorithm", "state"} (state: verified,
bad_signature, unknown_key, unsigned or not_checked). A service without a
projection exits 1 (not_found). @mesh is the origin's mesh record: its
MeshConfig (the mesh-wide request timeout, retry, retry budget and outlier
detection for route rules that set none), printed as those defaults in words.

Flags:
  --origin NAME       that origin's projection instead of the effective one
  --origin-keys PATH  verify its signature with the origins' public keys in PATH (YAML
                      or JSON, origins: {NAME: [PEM SPKI, …]}; default
                      $AETHER_ORIGIN_KEYS; without either, signatures are not checked)

${GLOBAL_FLAGS}
`,
  watch: `Usage: aetherctl watch [NS/SVC…] [--all-origins] [--resume REV]

Streams WatchConfig events, one line each: TYPE REVISION SERVICE ORIGIN
VERSION (a snapshot, SYNCED, then UPSERT and DELETE as they happen); -o json
prints each event as one line of proto JSON. Ctrl-C ends it (exit 0) and
prints the revision to resume from.

Flags:
  --all-origins    watch every origin's projections, not only the effective winners
  --resume REV     resume after revision REV (replay the changes since then)
  --keepalives     print KEEPALIVE events too

${GLOBAL_FLAGS}
`,
  explain: `Usage: aetherctl explain --from-namespace NS [--port N] METHOD URL [-H 'k: v']…
       aetherctl explain --from-namespace NS --grpc SERVICE/METHOD URL [-H 'k: v']…

Decides a request the way a caller's proxy in namespace NS would, with the
shared evaluator, over the destination's effective projection, and prints the
decision: status and outcome, the origin and version of the config that
decided it, the route, rule and match, the backend with its weight share,
request header changes, rewrite, redirect Location, mirrors, timeouts and
the retry policy that applies when the request is forwarded. The mesh
defaults (the @mesh record, from the same view, origin or agent) fill in the
request timeout and retry policy a rule does not set, marked (mesh default);
the record they came from, the retry budget and outlier detection are printed
too (-o json: meshDefaults, requestTimeout, retrySource, meshPolicies).

The URL's host names the destination service as cluster DNS does:
name.namespace, name.namespace.svc[.cluster.local], or a bare name in NS.
The port is --port, else the URL's, else 80 (443 for https). A service
without a projection is passed through to the service itself.

Weighted backends and fractional mirrors use a fixed random source, so the
same command always gives the same answer: by default the constant 0 (the
first backend with a non-zero weight); --random X uses the constant X in
[0, 1) (0.95 picks the backend whose cumulative weight share covers 95%);
--seed-random N uses a pseudo-random sequence seeded with N.

With --agent URL the projection is not asked of the registrar: it is the
destination's entry in that agent's route table (its GET /routes), what the
node's data plane applies, and the output says which source decided it:
local (the agent's cluster's own routes) or imported (from origin, version).
A service the agent does not route (not in its dependency set, or without
config) is passed through.

-o json prints the evaluator's Decision; with --agent it has one more field,
"agentRoute": {"agent", "routed", "source", "origin", "version"}.

Flags:
  --from-namespace NS   the calling workload's namespace (required)
  --port N              the service port dialled (default: the URL's port, else 80)
  --port-name NAME      that port's name, for routes attached with sectionName
  -H 'name: value'      a request header (repeatable)
  --grpc SERVICE/METHOD evaluate a gRPC call (METHOD may then be left out)
  --origin NAME         evaluate that origin's projection instead of the effective one
  --agent URL           evaluate the entry of that agent's route table (GET URL/routes)
  --random X            the random source's constant value, 0 <= X < 1 (default 0)
  --seed-random N       a seeded pseudo-random source instead

${GLOBAL_FLAGS}
`,
  status: `Usage: aetherctl status [--fail-on-rejections]

Prints the registrar's GetConfigStatus: its cluster, control cluster, store,
sync state and revision; per origin the projection count, newest and oldest
version and whether it is trusted; the projections the import policy rejects;
the services several trusted origins export (and who wins); the export state
with the routes the exporter rejected and problems reading its source.
-o json prints the response in proto JSON (with default values).

Flags:
  --fail-on-rejections  exit 3 when there are rejections, route rejections or source problems

${GLOBAL_FLAGS}
`,
  fleet: `${FLEET_USAGE}
${GLOBAL_FLAGS}
`,
  dashboard: `${DASHBOARD_USAGE}
${GLOBAL_FLAGS}
`,
};

const COMMANDS: readonly CommandName[] = [
  "list",
  "get",
  "watch",
  "explain",
  "status",
  "fleet",
  "dashboard",
];

/** The global flags that take a value, so the command can be found among the arguments. */
export const GLOBAL_VALUE_FLAGS: ReadonlySet<string> = new Set([
  "--registrar",
  "-o",
  "--output",
  "--timeout",
  ...Object.keys(CLIENT_TLS_OPTIONS).map((flag) => `--${flag}`),
]);

type ParseOptions = NonNullable<Parameters<typeof parseArgs>[0]>["options"];

const GLOBAL_OPTIONS = {
  registrar: { type: "string" },
  output: { type: "string", short: "o", default: "table" },
  timeout: { type: "string", default: "10s" },
  help: { type: "boolean", short: "h" },
  ...CLIENT_TLS_OPTIONS,
} as const satisfies ParseOptions;

const COMMAND_OPTIONS = {
  list: {
    origin: { type: "string" },
    "all-origins": { type: "boolean" },
    "origin-keys": { type: "string" },
  },
  get: { origin: { type: "string" }, "origin-keys": { type: "string" } },
  watch: {
    "all-origins": { type: "boolean" },
    resume: { type: "string" },
    keepalives: { type: "boolean" },
  },
  explain: {
    "from-namespace": { type: "string" },
    port: { type: "string" },
    "port-name": { type: "string" },
    header: { type: "string", short: "H", multiple: true },
    grpc: { type: "string" },
    origin: { type: "string" },
    agent: { type: "string" },
    random: { type: "string" },
    "seed-random": { type: "string" },
  },
  status: { "fail-on-rejections": { type: "boolean" } },
  fleet: FLEET_OPTIONS,
  dashboard: DASHBOARD_OPTIONS,
} as const satisfies Record<CommandName, ParseOptions>;

/** Finds the command among the arguments: the first one that is neither a flag nor a global flag's value. */
function findCommand(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "--") return i + 1 < argv.length ? i + 1 : -1;
    if (GLOBAL_VALUE_FLAGS.has(arg)) {
      i++;
      continue;
    }
    if (!arg.startsWith("-")) return i;
  }
  return -1;
}

/** Checks record names (`namespace/name`, or `@mesh`, the mesh record). */
function checkServices(services: readonly string[], command: CommandName): string[] {
  for (const service of services) {
    const problem = checkRecordName(service);
    if (problem !== undefined) throw new UsageError(problem, command);
  }
  return [...services];
}

function checkOrigin(origin: string | undefined, command: CommandName): string | undefined {
  if (origin === undefined) return undefined;
  const problem = checkClusterName(origin);
  if (problem !== undefined) throw new UsageError(`--origin: ${problem}`, command);
  return origin;
}

function isHttpUrl(text: string): boolean {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  return url.protocol === "http:" || url.protocol === "https:";
}

/** Checks `--agent URL`: an http(s) URL, returned without trailing slashes. */
export function checkAgentUrl(
  agent: string | undefined,
  origin: string | undefined,
): string | undefined {
  if (agent === undefined) return undefined;
  if (!isHttpUrl(agent)) {
    throw new UsageError(
      `--agent ${JSON.stringify(agent)} is not an http(s) URL (for example http://127.0.0.1:8081)`,
      "explain",
    );
  }
  if (origin !== undefined) {
    throw new UsageError(
      "use either --origin or --agent, not both (an agent holds one projection per service)",
      "explain",
    );
  }
  return agent.replace(/\/+$/, "");
}

function parseGlobal(values: Record<string, unknown>, env: NodeJS.ProcessEnv): GlobalOptions {
  const flag = values.registrar as string | undefined;
  const registrar = flag ?? (env.AETHER_REGISTRAR || DEFAULT_REGISTRAR);
  if (!isHttpUrl(registrar)) {
    const label = flag === undefined ? "$AETHER_REGISTRAR" : "--registrar";
    throw new UsageError(
      `${label} ${JSON.stringify(registrar)} is not an http(s) URL (for example ${DEFAULT_REGISTRAR})`,
    );
  }
  const output = values.output as string;
  if (output !== "table" && output !== "json") {
    throw new UsageError(`-o ${JSON.stringify(output)} must be table or json`);
  }
  let timeoutMs: number;
  try {
    timeoutMs = parseDuration(values.timeout as string);
  } catch (error) {
    throw new UsageError(`--timeout: ${(error as Error).message}`);
  }
  if (timeoutMs <= 0) throw new UsageError("--timeout must be more than 0");
  const withEnv = withClientTlsEnv(registrar, values as ClientTlsFlagValues, env);
  const tls = parseClientTlsFlags(registrar, withEnv.values, withEnv.labels);
  const global: GlobalOptions = { registrar: registrar.replace(/\/+$/, ""), output, timeoutMs };
  return tls === undefined ? global : { ...global, tls };
}

function parseCommand(
  name: CommandName,
  values: Record<string, unknown>,
  positionals: readonly string[],
  env: NodeJS.ProcessEnv,
): Command {
  const originKeys = () => originKeysSource(values["origin-keys"] as string | undefined, env);
  switch (name) {
    case "list": {
      const origin = checkOrigin(values.origin as string | undefined, name);
      const allOrigins = values["all-origins"] === true;
      if (origin !== undefined && allOrigins) {
        throw new UsageError("use either --origin or --all-origins, not both", name);
      }
      const services = checkServices(positionals, name);
      return { name, services, origin, allOrigins, originKeys: originKeys() };
    }
    case "get": {
      if (positionals.length !== 1) {
        throw new UsageError(
          "get needs exactly one service, NS/SVC (for example shop/checkout), or @mesh",
          name,
        );
      }
      const [service] = checkServices(positionals, name) as [string];
      const origin = checkOrigin(values.origin as string | undefined, name);
      return { name, service, origin, originKeys: originKeys() };
    }
    case "watch": {
      const resumeText = (values.resume as string | undefined) ?? "0";
      if (!/^\d{1,19}$/.test(resumeText)) {
        throw new UsageError(
          `--resume ${JSON.stringify(resumeText)} must be a revision number`,
          name,
        );
      }
      return {
        name,
        services: checkServices(positionals, name),
        allOrigins: values["all-origins"] === true,
        resume: BigInt(resumeText),
        keepalives: values.keepalives === true,
      };
    }
    case "explain": {
      const origin = checkOrigin(values.origin as string | undefined, name);
      return {
        name,
        target: buildExplainTarget({
          positionals,
          fromNamespace: values["from-namespace"] as string | undefined,
          port: values.port as string | undefined,
          portName: values["port-name"] as string | undefined,
          headers: (values.header as string[] | undefined) ?? [],
          grpc: values.grpc as string | undefined,
        }),
        origin,
        agent: checkAgentUrl(values.agent as string | undefined, origin),
        random: parseRandomFlags(
          values.random as string | undefined,
          values["seed-random"] as string | undefined,
        ),
      };
    }
    case "status":
      if (positionals.length > 0) {
        throw new UsageError(`status takes no arguments (got ${positionals.join(" ")})`, name);
      }
      return { name, failOnRejections: values["fail-on-rejections"] === true };
    case "fleet":
      return parseFleetCommand(values, positionals);
    case "dashboard":
      return parseDashboardCommand(values, positionals);
  }
}

/**
 * Parses aetherctl's arguments (without `node` and the script). `env`
 * supplies `$AETHER_REGISTRAR` and the TLS defaults (tls-env.ts). Throws a {@link UsageError} for anything it
 * cannot run; `aetherctl help [COMMAND]`, `-h` and `--help` give `kind: "help"`.
 */
export function parseAetherctlFlags(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = {},
): CommandLine {
  const index = findCommand(argv);
  const word = index < 0 ? undefined : (argv[index] as string);
  const rest = index < 0 ? [...argv] : [...argv.slice(0, index), ...argv.slice(index + 1)];
  if (word === "help") {
    const topic = rest.find((arg) => !arg.startsWith("-"));
    return { kind: "help", command: COMMANDS.find((c) => c === topic) };
  }
  const name = COMMANDS.find((c) => c === word);
  if (word !== undefined && name === undefined) {
    throw new UsageError(
      `unknown command ${JSON.stringify(word)} (commands: ${COMMANDS.join(", ")})`,
    );
  }
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: name !== undefined,
      options: { ...GLOBAL_OPTIONS, ...(name === undefined ? {} : COMMAND_OPTIONS[name]) },
    });
  } catch (error) {
    // Node's message goes on about "--" for positionals; the first sentence is the point.
    throw new UsageError(
      (error as Error).message.replace(/\. To specify a positional.*$/s, ""),
      name,
    );
  }
  if (parsed.values.help === true) return { kind: "help", command: name };
  if (name === undefined) throw new UsageError("no command given");
  const global = parseGlobal(parsed.values, env);
  return {
    kind: "run",
    global,
    command: parseCommand(name, parsed.values, parsed.positionals, env),
  };
}

/** The usage text of `command`, or the general one when it is undefined or not a command. */
export function usageOf(command: string | undefined): string {
  return COMMANDS.find((c) => c === command) === undefined
    ? AETHERCTL_USAGE
    : COMMAND_USAGE[command as CommandName];
}
