/**
 * The Fleet view (`#/fleet`, the default): clusters x services, each cell
 * the version a cluster serves and its state, with the filters in the URL
 * (`fleet-filters.ts`), the per-cluster summaries, and the last refresh's
 * error above the grid in space kept for it (nothing shifts). Root:
 * `section.fleet[data-state=loading|ready|error]`, `ready` once data shows.
 */
import { useEffect, useMemo, useRef } from "preact/hooks";
import { formatRoute } from "../../route.js";
import { useLive } from "../../use-live.js";
import type { ViewProps } from "../../view-props.js";
import { ClusterSummaries } from "./cluster-summaries.js";
import { type FleetFilters, filterQuery, filtersOf } from "./fleet-filters.js";
import { FleetFiltersForm } from "./fleet-filters-form.js";
import { FleetGrid } from "./fleet-grid.js";
import { fleetModel } from "./fleet-model.js";
import { useFleetData } from "./use-fleet-data.js";
import "./fleet.css";

/** Every value seen so far (the filters' suggestions outlive a narrowing filter). */
function useSeen(values: readonly string[]): string[] {
  const seen = useRef(new Set<string>());
  for (const value of values) seen.current.add(value);
  return [...seen.current].sort();
}

/** The Fleet view. */
export function FleetView({ client, live, route, navigate, ready }: ViewProps) {
  const filters = filtersOf(route.query);
  const key = JSON.stringify(filters);
  const { changes } = useLive(live);
  const { snapshot, error } = useFleetData(client, filters, changes[0]);
  const model = useMemo(
    () => (snapshot === undefined ? undefined : fleetModel(snapshot.response, filters)),
    [snapshot, key],
  );
  const clusters = useSeen(model?.columns.map((c) => c.cluster) ?? []);
  const namespaces = useSeen(
    snapshot?.response.services.map((s) => s.service.split("/")[0] ?? "").filter((n) => n !== "") ??
      [],
  );
  const setFilters = (next: FleetFilters) =>
    navigate(formatRoute({ view: "fleet", query: filterQuery(next) }), { replace: true });
  const state = model !== undefined ? "ready" : error !== "" ? "error" : "loading";
  useEffect(() => {
    if (state !== "loading") ready();
  }, [state]);
  return (
    <section class="fleet" data-state={state} aria-labelledby="view-title">
      <h1 id="view-title">Fleet</h1>
      <FleetFiltersForm
        filters={filters}
        clusters={clusters}
        namespaces={namespaces}
        onChange={setFilters}
      />
      <p class="fleet-error error" role="status">
        {error === "" ? "" : `Could not refresh (showing the last answer): ${error}`}
      </p>
      {snapshot?.source === "origins" ? (
        <p class="fleet-note">
          This registrar does not answer GetFleetStatus (it is older): one column per origin, from
          the stored projections; agents and drift are not known.
        </p>
      ) : null}
      {model === undefined ? (
        <p class="muted">{state === "loading" ? "Loading the fleet…" : ""}</p>
      ) : (
        <>
          <p class="fleet-counts">
            {model.rows.length} shown of {model.matching} matching service
            {model.matching === 1 ? "" : "s"}
            {model.received < model.matching
              ? ` (the registrar sent the worst ${model.received})`
              : ""}
            {model.synced ? "" : " · the registrar is not synced with the store"}
          </p>
          <ClusterSummaries summaries={model.summaries} />
          <FleetGrid
            model={model}
            onOpen={(service) => navigate(formatRoute({ view: "service", service }))}
          />
        </>
      )}
    </section>
  );
}
