/**
 * `npm run bench`: runs the benchmark (see run-bench.ts), writes the raw
 * JSON and regenerates the report, and prints the headline results as one
 * JSON object on its last line.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { parseCommandLine } from "../services/process/command-line.js";
import { BENCH_USAGE, parseBenchFlags } from "./bench-flags.js";
import { headline, renderReport } from "./report.js";
import { runBench } from "./run-bench.js";

const ROOT = resolve(import.meta.dirname, "..");

const command = parseCommandLine("bench", `${BENCH_USAGE}\n`, () => {
  const parsed = parseBenchFlags(process.argv.slice(2));
  return parsed.help ? "help" : parsed;
});
if ("exitCode" in command) process.exit(command.exitCode);
const flags = command.config;
const results = await runBench(flags);
const resultsDir = resolve(ROOT, flags.resultsDir);
await mkdir(resultsDir, { recursive: true });
await writeFile(join(resultsDir, "latest.json"), `${JSON.stringify(results, null, 2)}\n`);
if (flags.report !== "") {
  const reportPath = resolve(ROOT, flags.report);
  const previous = await readFile(reportPath, "utf8").catch(() => undefined);
  await mkdir(dirname(reportPath), { recursive: true });
  await writeFile(reportPath, renderReport(results, previous));
}
process.stdout.write(`${JSON.stringify(headline(results))}\n`);
process.exit(0);
