/**
 * Reading one change's share of a Prometheus histogram: the totals
 * (`_sum`, `_count`) of a histogram in a `/metrics` text, and what was
 * observed between two readings. Pure; the run (`run-bench.ts`) scrapes.
 */

/** A histogram's running totals: the sum of its observations and their count. */
export interface HistogramTotals {
  readonly sum: number;
  readonly count: number;
}

/**
 * The totals of the unlabelled histogram `name` in a Prometheus text
 * exposition (`name_sum` and `name_count` lines); undefined when either is
 * missing or not a number.
 */
export function histogramTotals(text: string, name: string): HistogramTotals | undefined {
  let sum: number | undefined;
  let count: number | undefined;
  for (const line of text.split("\n")) {
    const [key, value] = line.trim().split(/\s+/);
    if (key === `${name}_sum`) sum = Number(value);
    else if (key === `${name}_count`) count = Number(value);
  }
  if (sum === undefined || count === undefined || Number.isNaN(sum) || Number.isNaN(count)) {
    return undefined;
  }
  return { sum, count };
}

/**
 * The mean of what a histogram in seconds observed between two readings, in
 * milliseconds (the value itself when it observed one); undefined when it
 * observed nothing in between or a reading is missing.
 */
export function observedBetween(
  before: HistogramTotals | undefined,
  after: HistogramTotals | undefined,
): number | undefined {
  if (before === undefined || after === undefined) return undefined;
  const count = after.count - before.count;
  if (count <= 0) return undefined;
  return ((after.sum - before.sum) / count) * 1000;
}
