/**
 * The fleet view's filters as labelled form controls; each change is
 * handed to `onChange` (which puts it in the URL).
 */

import type { FleetFilters } from "./fleet-filters.js";
import { CELL_STATES, STATE_LABEL } from "./fleet-format.js";

/** The form: namespace, service, cluster (suggesting `clusters`) and state. */
export function FleetFiltersForm({
  filters,
  clusters,
  namespaces,
  onChange,
}: {
  filters: FleetFilters;
  clusters: readonly string[];
  namespaces: readonly string[];
  onChange: (next: FleetFilters) => void;
}) {
  const text = (key: "ns" | "q" | "cluster") => (event: Event) =>
    onChange({ ...filters, [key]: (event.currentTarget as HTMLInputElement).value });
  return (
    <form class="fleet-filters" onSubmit={(event) => event.preventDefault()}>
      <div class="field">
        <label for="fleet-ns">Namespace</label>
        <input
          id="fleet-ns"
          name="ns"
          list="fleet-namespaces"
          value={filters.ns}
          onInput={text("ns")}
        />
      </div>
      <div class="field">
        <label for="fleet-q">Service</label>
        <input id="fleet-q" name="q" type="search" value={filters.q} onInput={text("q")} />
      </div>
      <div class="field">
        <label for="fleet-cluster">Cluster</label>
        <input
          id="fleet-cluster"
          name="cluster"
          list="fleet-clusters"
          value={filters.cluster}
          onInput={text("cluster")}
        />
      </div>
      <div class="field">
        <label for="fleet-state">State</label>
        <select
          id="fleet-state"
          name="state"
          value={filters.state}
          onChange={(event) =>
            onChange({
              ...filters,
              state: (event.currentTarget.value as FleetFilters["state"]) ?? "",
            })
          }
        >
          <option value="">any</option>
          {CELL_STATES.map((state) => (
            <option key={state} value={state}>
              {STATE_LABEL[state].word}
            </option>
          ))}
        </select>
      </div>
      <datalist id="fleet-namespaces">
        {namespaces.map((ns) => (
          <option key={ns} value={ns} />
        ))}
      </datalist>
      <datalist id="fleet-clusters">
        {clusters.map((cluster) => (
          <option key={cluster} value={cluster} />
        ))}
      </datalist>
    </form>
  );
}
