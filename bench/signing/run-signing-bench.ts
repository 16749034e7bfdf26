/**
 * `npm run bench -- --signing`: what signed projections cost, measured
 * twice in one run with everything else equal: an unsigned leg, then a
 * signed one (signing-leg.ts), each on its own fresh etcd with its own hub
 * and spoke registrar processes and agent workers. The cold export and the
 * spoke's import are timed in {@link EXPORT_ROUNDS} rounds per leg, the
 * earlier ones interleaved (export-round.ts), and reported as medians: one
 * round's CPU moves with the machine's load by as much as signing adds.
 * And, in process, what
 * one sign and one verify of a typical projection cost with Node's
 * `crypto` (micro.ts). The hub's Ed25519 key is made at run time in a
 * temporary directory, removed at the end.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beginRun, type LegBenchFlags, machineOf, oneMinuteLoad, profileArgs } from "../leg-run.js";
import { progress } from "../run-bench.js";
import { createScenario } from "../scenario.js";
import { makeBenchKeys } from "./bench-keys.js";
import { type RoundFigures, startExportRound } from "./export-round.js";
import { type MicroFigures, measureMicro } from "./micro.js";
import { runSigningLeg, type SigningLeg } from "./signing-leg.js";

/** The flags of the signing benchmark (see bench-flags.ts). */
export type SigningBenchFlags = LegBenchFlags;

/** The raw results (bench/results/signing.json). */
export interface SigningBenchResults {
  readonly startedAt: string;
  /** `loadAverage`: the 1-minute load average at the start (others' work too), `loadAverageEnd` at the end. */
  readonly machine: {
    cpus: number;
    node: string;
    loadAverage: number;
    loadAverageEnd: number;
  };
  readonly flags: SigningBenchFlags;
  readonly micro: MicroFigures;
  /** The unsigned leg, then the signed one (without `sampleValue`). */
  readonly legs: readonly Omit<SigningLeg, "sampleValue">[];
}

const MICRO_ITERATIONS = 5_000;
/**
 * Export rounds per leg: the earlier ones interleaved (unsigned, signed,
 * unsigned, …), the last one the leg's own, which the edits run on.
 */
const EXPORT_ROUNDS = 3;
const load = oneMinuteLoad;

/** Runs both legs and the in-process figures; see the module comment. */
export async function runSigningBench(flags: SigningBenchFlags): Promise<SigningBenchResults> {
  const { startedAt, loadAverage } = beginRun();
  const scenario = createScenario({ ...flags, changes: flags.changes });
  const dir = await mkdtemp(join(tmpdir(), "aether-bench-signing-"));
  try {
    const keyDir = join(dir, "keys");
    await mkdir(keyDir, { mode: 0o700 });
    const keys = await makeBenchKeys(keyDir, "hub");
    const profile = profileArgs(flags.cpuProfDir);
    const setup = (leg: string) => ({
      services: flags.services,
      agents: flags.agents,
      workers: flags.workers,
      scenario,
      changes: scenario.changes,
      dir: join(dir, leg),
      profile,
    });
    const earlier: { unsigned: RoundFigures[]; signed: RoundFigures[] } = {
      unsigned: [],
      signed: [],
    };
    for (let i = 1; i < EXPORT_ROUNDS; i++) {
      for (const leg of [undefined, keys]) {
        const name = leg === undefined ? "unsigned" : "signed";
        progress(`export round ${i} of ${EXPORT_ROUNDS}, ${name}`);
        const exported = await startExportRound(setup(`round-${i}-${name}`), leg);
        await exported.stop();
        earlier[name].push(exported.figures);
      }
    }
    progress(`export round ${EXPORT_ROUNDS} of ${EXPORT_ROUNDS}, unsigned, and its edits`);
    const unsigned = await runSigningLeg(setup("unsigned"), undefined, load(), earlier.unsigned);
    progress(`export round ${EXPORT_ROUNDS} of ${EXPORT_ROUNDS}, signed, and its edits`);
    const signed = await runSigningLeg(setup("signed"), keys, load(), earlier.signed);
    if (unsigned.stored.signedValues !== 0 || signed.stored.signedValues !== signed.stored.values) {
      throw new Error(
        `signed values: ${unsigned.stored.signedValues} in the unsigned leg, ${signed.stored.signedValues} of ${signed.stored.values} in the signed one`,
      );
    }
    const { sampleValue, ...unsignedLeg } = unsigned;
    if (sampleValue === undefined || sampleValue.length === 0) {
      throw new Error("the unsigned leg read no stored value to sign in process");
    }
    progress("in process: sign and verify one stored projection");
    const micro = measureMicro(sampleValue, "hub", keys.key, MICRO_ITERATIONS);
    return {
      startedAt,
      machine: machineOf(loadAverage),
      flags,
      micro,
      legs: [unsignedLeg, signed],
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
