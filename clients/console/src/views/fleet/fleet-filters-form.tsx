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
      <label>
        Namespace
        <input name="ns" list="fleet-namespaces" value={filters.ns} onInput={text("ns")} />
      </label>
      <label>
        Service
        <input name="q" type="search" value={filters.q} onInput={text("q")} />
      </label>
      <label>
        Cluster
        <input
          name="cluster"
          list="fleet-clusters"
          value={filters.cluster}
          onInput={text("cluster")}
        />
      </label>
      <label>
        State
        <select
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
      </label>
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
