/**
 * Class-2 drift: which clusters' local config for a service differs from
 * most others'. Pure, no I/O.
 */

/** One cluster's local config digest of a service (empty: it has none). */
export interface ClusterDigest {
  /** The cluster. */
  readonly cluster: string;
  /** The lowercase hex digest; empty when the cluster has no local config for the service. */
  readonly digest: string;
}

/**
 * The drifted clusters among `digests` (the fresh clusters that report the
 * service and read a local source), in input order: those whose digest
 * differs from the baseline, the most common digest (on a tie the empty
 * digest when it is among the most common, else the smallest). Nothing is
 * drifted with fewer than two clusters to compare.
 */
export function driftedClusters(digests: readonly ClusterDigest[]): string[] {
  if (digests.length < 2) return [];
  const counts = new Map<string, number>();
  for (const { digest } of digests) counts.set(digest, (counts.get(digest) ?? 0) + 1);
  const most = Math.max(...counts.values());
  const tied = [...counts.entries()].filter(([, n]) => n === most).map(([d]) => d);
  const baseline = tied.includes("") ? "" : (tied.sort()[0] as string);
  return digests.filter((d) => d.digest !== baseline).map((d) => d.cluster);
}
