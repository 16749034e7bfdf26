/** One line per cluster: its services by state, its agents, its last report and whether it is stale. */
import type { ClusterSummary } from "./fleet-model.js";

/** The clusters' summaries. */
export function ClusterSummaries({ summaries }: { summaries: readonly ClusterSummary[] }) {
  return (
    <ul class="fleet-summaries" aria-label="Clusters">
      {summaries.map((s) => (
        <li key={s.cluster} data-cluster={s.cluster} class={s.stale ? "state-stale" : undefined}>
          <strong>{s.cluster}</strong>
          {s.stale ? " (stale)" : ""}: {s.services["in-sync"]} in sync, {s.services.behind} behind,{" "}
          {s.services.rejecting} rejecting, {s.services.drifted} drifted · agents: {s.agents} · last
          report {s.lastReport}
        </li>
      ))}
    </ul>
  );
}
