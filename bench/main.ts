/**
 * `npm run bench`: runs the benchmark (see run-bench.ts), writes the raw
 * JSON and regenerates the report, and prints the headline results as one
 * JSON object on its last line.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { parseCommandLine } from "../services/process/command-line.js";
import { stopAllAgents } from "../test/support/agent-process.js";
import { stopAllRegistrars } from "../test/support/registrar-process.js";
import { BENCH_USAGE, parseBenchFlags } from "./bench-flags.js";
import { consoleHeadline, renderConsoleReport } from "./console/console-report.js";
import { runConsoleBench } from "./console/run-console-bench.js";
import { fleetHeadline, renderFleetReport } from "./fleet/fleet-report.js";
import { runFleetBench } from "./fleet/run-fleet-bench.js";
import { hostileHeadline, renderHostileReport } from "./hostile/hostile-report.js";
import { runHostileBench } from "./hostile/run-hostile.js";
import { headline, renderReport } from "./report.js";
import { runBench } from "./run-bench.js";
import { runSigningBench } from "./signing/run-signing-bench.js";
import { renderSigningReport, signingHeadline } from "./signing/signing-report.js";
import { idleStreamsHeadline, renderIdleStreamsReport } from "./streams/idle-streams-report.js";
import { runIdleStreamsBench } from "./streams/run-idle-streams.js";
import { runTlsBench } from "./tls/run-tls-bench.js";
import { renderTlsReport, tlsHeadline } from "./tls/tls-report.js";

const ROOT = resolve(import.meta.dirname, "..");

const command = parseCommandLine("bench", `${BENCH_USAGE}\n`, () => {
  const parsed = parseBenchFlags(process.argv.slice(2));
  return parsed.help ? "help" : parsed;
});
if ("exitCode" in command) process.exit(command.exitCode);
const flags = command.config;
// Ctrl-C or SIGTERM mid-run: stop the registrar and agent processes (etcd
// and the workers go with this process's exit).
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    process.stderr.write(`bench: ${signal}, stopping\n`);
    void Promise.all([stopAllRegistrars(), stopAllAgents()]).finally(() => process.exit(130));
  });
}
/** Rewrites `--report` (unless "") with `render` of its previous text. */
async function regenerateReport(render: (previous: string | undefined) => string): Promise<void> {
  if (flags.report === "") return;
  const reportPath = resolve(ROOT, flags.report);
  const previous = await readFile(reportPath, "utf8").catch(() => undefined);
  await mkdir(dirname(reportPath), { recursive: true });
  await writeFile(reportPath, render(previous));
}
const resultsDir = resolve(ROOT, flags.resultsDir);
await mkdir(resultsDir, { recursive: true });
/**
 * Writes a mode's raw results as `file` in the results directory, its
 * section of the report (`render`), prints its headline, and exits.
 */
async function finish<R>(
  file: string,
  results: R,
  render: (results: R, previous: string | undefined) => string,
  headlineOf: (results: R) => object,
): Promise<never> {
  await writeFile(join(resultsDir, file), `${JSON.stringify(results, null, 2)}\n`);
  await regenerateReport((previous) => render(results, previous));
  process.stdout.write(`${JSON.stringify(headlineOf(results))}\n`);
  process.exit(0);
}
const profileDir = flags.cpuProf ? { cpuProfDir: join(resultsDir, "profiles") } : {};
if (flags.hostile) {
  const hostile = await runHostileBench({
    services: flags.services,
    agents: flags.agents,
    deps: flags.deps,
    phaseSeconds: flags.phaseSeconds,
    streams: flags.hostileStreams,
    idleConnections: flags.idleConnections,
    concurrentLists: flags.concurrentLists,
    heapMb: flags.heapMb,
  });
  await finish("hostile.json", hostile, renderHostileReport, hostileHeadline);
}
if (flags.console) {
  const results = await runConsoleBench({ services: flags.services, loads: flags.loads });
  await finish("console.json", results, renderConsoleReport, consoleHeadline);
}
const { services, agents, deps, workers, seed } = flags;
if (flags.idleStreams > 0) {
  const results = await runIdleStreamsBench({ streams: flags.idleStreams, services, deps, seed });
  await finish("idle-streams.json", results, renderIdleStreamsReport, idleStreamsHeadline);
}
if (flags.tls) {
  const { handshakeSeconds, handshakeConcurrency } = flags;
  const tls = await runTlsBench({
    ...{ services, agents, deps, workers, seed, handshakeSeconds, handshakeConcurrency },
    ...profileDir,
  });
  await finish("tls.json", tls, renderTlsReport, tlsHeadline);
}
if (flags.signing) {
  const signing = await runSigningBench({
    ...{ services, agents, deps, workers, seed, changes: flags.changes },
    ...profileDir,
  });
  await finish("signing.json", signing, renderSigningReport, signingHeadline);
}
if (flags.fleet) {
  const fleet = await runFleetBench({
    ...{ services, agents, deps, workers, seed, changes: flags.changes },
    ...profileDir,
  });
  await finish("fleet.json", fleet, renderFleetReport, fleetHeadline);
}
await finish("latest.json", await runBench(flags), renderReport, headline);
