/**
 * The benchmark's command line: `npm run bench -- [flags]`.
 */
import { parseArgs } from "node:util";
import { UsageError } from "../services/process/usage-error.js";

/** The usage text of `npm run bench`. */
export const BENCH_USAGE = `Usage: npm run bench -- [flags]

Builds a mesh on a real etcd (a hub exporting N services, a spoke registrar
serving M agents' watch streams), measures propagation against etcd's own
watch latency and against polling, demand scoping, the cold paths, a
registrar restart and memory, then writes bench/REPORT.md and
bench/results/latest.json. Its last line of output is the results as JSON.

Flags:
  --services N       exported services (default 10000)
  --agents M         agents, one watch stream each (default 1000)
  --deps K           services each agent depends on (default 20)
  --changes C        route edits measured in watch mode (default 200)
  --poll-changes P   route edits measured in poll mode (default min(C, 20))
  --workers W        agent worker processes (default 4)
  --seed S           seed of the scenario's random choices (default 1)
  --results DIR      where the raw JSON goes (default bench/results)
  --report FILE      the report to regenerate (default bench/REPORT.md; "" writes none)
  --cpu-prof         profile the registrars and workers (node --cpu-prof) into DIR/profiles
  --hot N            N of the C edits go to one service every agent depends on, spread evenly;
                     their end to end, registrar and agent shares are reported apart (default 0)
  --etcd-members E   run on an etcd cluster of E members (1, 3 or 5; default 1), every
                     process given every endpoint
  -h, --help         print this help

Hostile mode (npm run bench -- --hostile): instead of the above, one registrar as
the deployment runs it (--heap-mb heap cap, production limits, an admin port)
seeded with --services services (default 10000), serving --agents real agents
(default 20) that each depend on --deps services, is attacked phase by phase
from separate processes, while /healthz is probed on both ports, a change
reaches the agents every second and a polite client lists; writes
bench/results/hostile.json and the hostile section of the report.
  --hostile              run the hostile benchmark
  --phase-seconds S      length of each phase (default 20)
  --hostile-streams N    HTTP/2 streams that never finish their body or never read (default 20000)
  --idle-connections N   connections that send nothing or an unfinished header block (default 20000)
  --concurrent-lists N   unfiltered ListAllConfig calls in flight at once (default 10000)
  --heap-mb N            the registrar's --max-old-space-size (default 384, the deployment's)

TLS mode (npm run bench -- --tls): instead of the above, what mutual TLS costs
the registrar, measured twice in one run (h2c, then mTLS with SVIDs made by
openssl): its RSS per watch stream with --agents real agents (default 1000,
each its own connection, over TLS with its SVID) on --services services
(default 1000) and --workers workers, and new connections per second (each
connects, handshakes in full, makes one ListConfig call and closes), one at a
time and N at once; writes bench/results/tls.json and the TLS section of the report.
(--changes and --poll-changes do not apply; --cpu-prof profiles each leg's
registrar and workers into DIR/profiles/registrar-h2c, registrar-mTLS, ...)
  --tls                        run the TLS benchmark
  --handshake-seconds S        length of each connection-rate measurement (default 10)
  --handshake-concurrency N    connections opened at once in the concurrent one (default 16)

Signing mode (npm run bench -- --signing): instead of the above, what signed
projections cost, measured twice in one run with everything else equal
(unsigned, then signed with an Ed25519 key made at run time in a temporary
directory), each leg on a fresh etcd: the hub registrar's cold export of
--services services (default 10000; wall time and CPU per projection), a spoke
registrar importing and serving them all (ListAllConfig; --origin-keys
--require-signatures when signed), --agents real agents (default 1000, --deps
each, --workers workers; verifying end to end when signed) and --changes route
edits (default 200) through the hub's manifests until every interested agent
applied each, with the agents' CPU meanwhile; the bytes a signature adds to a
stored value; one sign and one verify in process. Writes
bench/results/signing.json and the signing section of the report. (--seed,
--results, --report apply; --poll-changes does not; --cpu-prof profiles each
leg's registrars and workers into DIR/profiles/hub-signed, spoke-unsigned, ...)
  --signing                    run the signing benchmark

Fleet mode (npm run bench -- --fleet): instead of the above, what the agents'
reports of what they applied (ReportAppliedConfig) cost, measured twice in one
run with everything else equal (reporting off, then on), each leg on a fresh
etcd: a hub registrar exporting --services services (default 1000), a spoke
registrar (--agent-report-interval 30s, its default) serving --agents real
agents (default 1000, --deps each, --workers workers, each its own agent id);
30 s idle (one report interval), then a burst of --changes route edits (default
200) written as fast as possible until every interested agent applied each
edited service's final version and the spoke's accepted reports stood still for
1 s. Over the idle window and the burst: spoke
and hub CPU, store writes per second by kind (config, status), the reports the
spoke received, the burst's time to all applied. Writes bench/results/fleet.json
and the fleet reporting section of the report. (--seed, --results, --report,
--cpu-prof apply; --poll-changes does not.)
  --fleet                      run the fleet reporting benchmark

Console mode (npm run bench -- --console): instead of the above, the console's
first view: the sandbox in this process (hub, two spokes, their agents and the
console, plaintext, unsigned) over a generated mesh of --services services
(default 1000), waited until GetFleetStatus reports each in every cluster,
then headless Chromium (/usr/bin/chromium or $AETHER_CHROMIUM) loads #/fleet
once to warm up and --loads times (default 5), each in a fresh browser
context, timing navigation start to section.fleet[data-state=ready] with
every row (at most 1000: GetFleetStatus's limit); and the bytes of the
console's built assets. Writes bench/results/console.json and the console
section of the report. (--services, --loads, --results and --report apply;
the other flags do not.)
  --console                    run the console first-view benchmark
  --loads L                    measured loads (default 5)

Idle streams mode (npm run bench -- --idle-streams N): instead of the above,
the registrar's heap per idle WatchConfig stream on each path (the WatchConfig
lane, then connect-es): a registrar in its own process (node --expose-gc,
memory store) holding --services services (default 1000), then 10,000 (the
target's point; once only when --services is 10,000 or more), reports its
heapUsed after forced full collections before, with N connections, with N
idle streams (one connection each, --deps services each, past SYNCED) and
after they closed; the streams come from a separate process. Writes
bench/results/idle-streams.json and the idle streams section of the report.
(--services, --deps, --seed, --results and --report apply; the others do not.)
  --idle-streams N             run the idle streams benchmark with N streams per path`;

/** The parsed flags. */
export interface BenchFlags {
  readonly services: number;
  readonly agents: number;
  readonly deps: number;
  readonly changes: number;
  readonly pollChanges: number;
  readonly workers: number;
  readonly seed: number;
  readonly resultsDir: string;
  readonly report: string;
  readonly cpuProf: boolean;
  /** `--hot`: how many of the watch-mode edits go to the service every agent depends on. */
  readonly hot: number;
  /** `--etcd-members`: the size of the etcd cluster the default run uses. */
  readonly etcdMembers: number;
  readonly help: boolean;
  /** `--hostile`: run the hostile benchmark (bench/hostile/) instead. */
  readonly hostile: boolean;
  readonly phaseSeconds: number;
  readonly hostileStreams: number;
  readonly idleConnections: number;
  readonly concurrentLists: number;
  readonly heapMb: number;
  /** `--tls`: run the TLS cost benchmark (bench/tls/) instead. */
  readonly tls: boolean;
  readonly handshakeSeconds: number;
  readonly handshakeConcurrency: number;
  /** `--signing`: run the signing cost benchmark (bench/signing/) instead. */
  readonly signing: boolean;
  /** `--fleet`: run the fleet reporting cost benchmark (bench/fleet/) instead. */
  readonly fleet: boolean;
  /** `--console`: run the console first-view benchmark (bench/console/) instead. */
  readonly console: boolean;
  /** `--loads`: the console benchmark's measured loads. */
  readonly loads: number;
  /** `--idle-streams N`: run the idle streams benchmark (bench/streams/) with N streams; 0: not. */
  readonly idleStreams: number;
}

function positive(name: string, text: string | undefined, fallback: number, min = 1): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    throw new UsageError(`--${name} must be an integer ≥ ${min}, not ${JSON.stringify(text)}`);
  }
  return value;
}

/** Throws a {@link UsageError} when `--hot` or `--etcd-members` do not fit the run asked for. */
function checkDefaultRunFlags(
  modes: readonly unknown[],
  flags: { hot: number; changes: number; etcdMembers: number },
): void {
  const { hot, changes, etcdMembers } = flags;
  if (hot > 0 && modes.length > 0) {
    throw new UsageError(`--hot applies to the default run only, not to ${modes.join("")}`);
  }
  if (hot > changes) throw new UsageError(`--hot ${hot} is more than --changes ${changes}`);
  if (![1, 3, 5].includes(etcdMembers)) {
    throw new UsageError(`--etcd-members must be 1, 3 or 5, not ${etcdMembers}`);
  }
  if (etcdMembers > 1 && modes.length > 0) {
    throw new UsageError(
      `--etcd-members applies to the default run only, not to ${modes.join("")}`,
    );
  }
}

/** Parses `argv` (without node and the script); throws {@link UsageError} on bad flags. */
export function parseBenchFlags(argv: readonly string[]): BenchFlags {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        services: { type: "string" },
        agents: { type: "string" },
        deps: { type: "string" },
        changes: { type: "string" },
        "poll-changes": { type: "string" },
        workers: { type: "string" },
        seed: { type: "string" },
        results: { type: "string" },
        report: { type: "string" },
        "cpu-prof": { type: "boolean" },
        hot: { type: "string" },
        "etcd-members": { type: "string" },
        help: { type: "boolean", short: "h" },
        hostile: { type: "boolean" },
        "phase-seconds": { type: "string" },
        "hostile-streams": { type: "string" },
        "idle-connections": { type: "string" },
        "concurrent-lists": { type: "string" },
        "heap-mb": { type: "string" },
        tls: { type: "boolean" },
        "handshake-seconds": { type: "string" },
        "handshake-concurrency": { type: "string" },
        signing: { type: "boolean" },
        fleet: { type: "boolean" },
        console: { type: "boolean" },
        loads: { type: "string" },
        "idle-streams": { type: "string" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const str = (name: string): string | undefined => values[name] as string | undefined;
  const hostile = values.hostile === true;
  const tls = values.tls === true;
  const signing = values.signing === true;
  const fleet = values.fleet === true;
  const consoleMode = values.console === true;
  const idleStreams = positive("idle-streams", str("idle-streams"), 0);
  const modes = [
    hostile && "--hostile",
    tls && "--tls",
    signing && "--signing",
    fleet && "--fleet",
    consoleMode && "--console",
    idleStreams > 0 && "--idle-streams",
  ].filter(Boolean);
  if (modes.length > 1) throw new UsageError(`${modes.join(" and ")} are separate runs; give one`);
  const services = positive(
    "services",
    str("services"),
    tls || fleet || consoleMode || idleStreams > 0 ? 1_000 : 10_000,
  );
  const deps = positive("deps", str("deps"), 20);
  // The console run has no agents of its own: --deps does not apply to it.
  if (deps > services && !consoleMode) {
    throw new UsageError(`--deps ${deps} is more than --services ${services}`);
  }
  const changes = positive("changes", str("changes"), 200);
  const hot = positive("hot", str("hot"), 0, 0);
  const etcdMembers = positive("etcd-members", str("etcd-members"), 1);
  checkDefaultRunFlags(modes, { hot, changes, etcdMembers });
  return {
    services,
    agents: positive("agents", str("agents"), hostile ? 20 : 1_000),
    deps,
    changes,
    pollChanges: positive("poll-changes", str("poll-changes"), Math.min(changes, 20), 0),
    workers: positive("workers", str("workers"), 4),
    seed: positive("seed", str("seed"), 1, 0),
    resultsDir: str("results") ?? "bench/results",
    report: str("report") ?? "bench/REPORT.md",
    cpuProf: values["cpu-prof"] === true,
    hot,
    etcdMembers,
    help: values.help === true,
    hostile,
    phaseSeconds: positive("phase-seconds", str("phase-seconds"), 20),
    hostileStreams: positive("hostile-streams", str("hostile-streams"), 20_000, 0),
    idleConnections: positive("idle-connections", str("idle-connections"), 20_000, 0),
    concurrentLists: positive("concurrent-lists", str("concurrent-lists"), 10_000, 0),
    heapMb: positive("heap-mb", str("heap-mb"), 384, 64),
    tls,
    handshakeSeconds: positive("handshake-seconds", str("handshake-seconds"), 10),
    handshakeConcurrency: positive("handshake-concurrency", str("handshake-concurrency"), 16),
    signing,
    fleet,
    console: consoleMode,
    loads: positive("loads", str("loads"), 5),
    idleStreams,
  };
}
