/**
 * The Fleet view (`#/fleet`, the default): clusters x services, each cell
 * the version a cluster serves and its state, with the filters in the URL
 * (`fleet-filters.ts`), the per-cluster summaries, and the last refresh's
 * error above the grid in space kept for it (nothing shifts). Rows come
 * worst first at the first answer and when the filters change; refreshes
 * keep that order (`row-order.ts`), so an update moves no row. Root:
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
import { type FleetModel, fleetModel } from "./fleet-model.js";
import { keepRowOrder } from "./row-order.js";
import { useFleetData } from "./use-fleet-data.js";
import "./fleet.css";

/** Every value seen so far (the filters' suggestions outlive a narrowing filter). */
function useSeen(values: readonly string[]): string[] {
  const seen = useRef(new Set<string>());
  for (const value of values) seen.current.add(value);
  return [...seen.current].sort();
}

/**
 * `model` with its rows in the order shown for the same filters before
 * (`filtersKey`), see `row-order.ts`; a change of filters sorts again.
 */
function useStableRows(model: FleetModel | undefined, filtersKey: string): FleetModel | undefined {
  const shown = useRef<{ key: string; services: string[] } | undefined>(undefined);
  return useMemo(() => {
    if (model === undefined) return undefined;
    const previous = shown.current?.key === filtersKey ? shown.current.services : undefined;
    const rows = keepRowOrder(previous, model.rows);
    shown.current = { key: filtersKey, services: rows.map((row) => row.service) };
    return rows === model.rows ? model : { ...model, rows };
  }, [model]);
}

/** The Fleet view. */
export function FleetView({ client, live, route, navigate, ready }: ViewProps) {
  const filters = filtersOf(route.query);
  const key = JSON.stringify(filters);
  const { changes } = useLive(live);
  const { snapshot, error } = useFleetData(client, filters, changes[0]);
  const model = useStableRows(
    useMemo(
      () => (snapshot === undefined ? undefined : fleetModel(snapshot.response, filters)),
      [snapshot, key],
    ),
    key,
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
