/**
 * The random sources `aetherctl explain` gives the evaluator, so that a
 * weighted split or a fractional mirror decides the same way every time it is
 * run with the same flags: a constant (`--random X`, default 0: the first
 * backend with a non-zero weight, and every mirror with a fraction above 0),
 * or a seeded pseudo-random sequence (`--seed-random N`). Pure.
 */
import { mulberry32 } from "../../services/common/mulberry32.js";
import { UsageError } from "../../services/process/usage-error.js";

/** A random source and how to name it in the output. */
export interface RandomSource {
  /** Returns the next number in [0, 1). */
  readonly next: () => number;
  /** A short description: `constant 0` or `seeded 42`. */
  readonly description: string;
}

/** A source that always returns `value` (in [0, 1)). */
export function constantRandom(value: number): RandomSource {
  return { next: () => value, description: `constant ${value}` };
}

/**
 * A source that returns the mulberry32 sequence of `seed` (a 32-bit integer):
 * reproducible, spread evenly over [0, 1).
 */
export function seededRandom(seed: number): RandomSource {
  return { next: mulberry32(seed), description: `seeded ${seed}` };
}

/**
 * The source `--random` and `--seed-random` ask for (at most one of them;
 * neither means `constantRandom(0)`). Throws a {@link UsageError} for a value
 * out of range or both flags.
 */
export function parseRandomFlags(
  random: string | undefined,
  seed: string | undefined,
): RandomSource {
  if (random !== undefined && seed !== undefined) {
    throw new UsageError("use either --random or --seed-random, not both", "explain");
  }
  if (seed !== undefined) {
    if (!/^\d{1,10}$/.test(seed) || Number(seed) > 0xffffffff) {
      throw new UsageError(
        `--seed-random ${JSON.stringify(seed)} must be a whole number from 0 to 4294967295`,
        "explain",
      );
    }
    return seededRandom(Number(seed));
  }
  if (random === undefined) return constantRandom(0);
  const value = /^\d*\.?\d+$/.test(random) ? Number(random) : Number.NaN;
  if (!(value >= 0 && value < 1)) {
    throw new UsageError(
      `--random ${JSON.stringify(random)} must be a number from 0 up to (not including) 1`,
      "explain",
    );
  }
  return constantRandom(value);
}
