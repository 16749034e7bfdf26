/** Small statistics helpers of the benchmark. */

/** The q-quantile (0..1) of `values` by the nearest-rank method; NaN when empty. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1] as number;
}

/** The summary of a latency sample, in milliseconds, rounded to 0.01 ms. */
export interface LatencySummary {
  readonly count: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

/** Summarizes `values` (milliseconds). */
export function summarize(values: readonly number[]): LatencySummary {
  const round = (x: number): number => Math.round(x * 100) / 100;
  return {
    count: values.length,
    p50: round(quantile(values, 0.5)),
    p90: round(quantile(values, 0.9)),
    p99: round(quantile(values, 0.99)),
    max: round(values.length === 0 ? Number.NaN : Math.max(...values)),
  };
}
