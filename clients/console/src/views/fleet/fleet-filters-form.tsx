/**
 * The fleet view's filters as labelled form controls; each change is
 * handed to `onChange` (which puts it in the URL).
 */

import type { FleetFilters } from "./fleet-filters.js";
import { CELL_STATES, STATE_LABEL } from "./fleet-format.js";

/** The filters typed as text. */
type TextKey = "ns" | "q" | "cluster";

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
  const field = (key: TextKey, label: string, list?: string) => (
    <div class="field">
      <label for={`fleet-${key}`}>{label}</label>
      <input
        id={`fleet-${key}`}
        name={key}
        type={key === "q" ? "search" : "text"}
        list={list}
        value={filters[key]}
        onInput={(event) => onChange({ ...filters, [key]: event.currentTarget.value })}
      />
    </div>
  );
  return (
    <form class="fleet-filters" onSubmit={(event) => event.preventDefault()}>
      {field("ns", "Namespace", "fleet-namespaces")}
      {field("q", "Service")}
      {field("cluster", "Cluster", "fleet-clusters")}
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
