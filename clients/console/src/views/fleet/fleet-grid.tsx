/**
 * The fleet grid: a table with role=grid, services down, their origin,
 * version and skew, then one column per cluster; a roving tabindex (one
 * cell in the tab order, arrows move it: `fleet-grid-nav.ts`), Enter or a
 * click opens the row's service. The service column stays put while the
 * grid scrolls sideways.
 */
import { useLayoutEffect, useRef, useState } from "preact/hooks";
import { clampPos, type GridPos, moveInGrid } from "./fleet-grid-nav.js";
import type { FleetCell, FleetModel } from "./fleet-model.js";
import { StateTag } from "./state-tag.js";

/** Columns before the clusters: service, origin, version, skew. */
const LEAD_COLUMNS = 4;

function Cell({ cell }: { cell: FleetCell }) {
  // The third line always takes its place (agents, then the first rejection), so a
  // rejection coming or going changes no row's height.
  const agents = cell.agents === "" ? "" : `${cell.agents} agents`;
  return (
    <>
      <span class="mono ver">{cell.state === undefined ? "" : cell.short}</span>
      <StateTag state={cell.state} />
      <span class="agents">
        {[agents, ...cell.rejections.slice(0, 1)].filter((t) => t !== "").join(" · ")}
      </span>
    </>
  );
}

/** The grid of `model`; `onOpen(service)` opens a service's view. */
export function FleetGrid({
  model,
  onOpen,
}: {
  model: FleetModel;
  onOpen: (service: string) => void;
}) {
  const table = useRef<HTMLTableElement>(null);
  const [focus, setFocus] = useState<{ service: string; col: number; row: number }>({
    ...{ service: "", col: 0, row: 0 },
  });
  const [moved, setMoved] = useState(0);
  const size = { rows: model.rows.length, cols: LEAD_COLUMNS + model.columns.length };
  const found = model.rows.findIndex((r) => r.service === focus.service);
  const at = clampPos({ row: found >= 0 ? found : focus.row, col: focus.col }, size);
  const go = (pos: GridPos, moveFocus: boolean) => {
    setFocus({ ...pos, service: model.rows[pos.row]?.service ?? "" });
    if (moveFocus) setMoved((n) => n + 1);
  };
  // Moved in the commit (not a frame later), so the next key already starts from it.
  useLayoutEffect(() => {
    if (moved > 0) table.current?.querySelector<HTMLElement>('[tabindex="0"]')?.focus();
  }, [moved]);
  const onKeyDown = (event: KeyboardEvent) => {
    const service = model.rows[at.row]?.service;
    if (event.key === "Enter" && service !== undefined) {
      event.preventDefault();
      onOpen(service);
      return;
    }
    const next = moveInGrid(at, event.key, size, event.ctrlKey);
    if (next === undefined) return;
    event.preventDefault();
    go(next, true);
  };
  const cellProps = (row: number, col: number) => ({
    tabIndex: row === at.row && col === at.col ? 0 : -1,
    onFocus: () => (row !== at.row || col !== at.col) && go({ row, col }, false),
    onClick: () => onOpen(model.rows[row]?.service ?? ""),
  });
  return (
    <div class="fleet-scroll">
      <table
        ref={table}
        // biome-ignore lint/a11y/noNoninteractiveElementToInteractiveRole: WAI-ARIA's data grid pattern (a table with a roving tabindex).
        role="grid"
        class="fleet-grid"
        aria-label="Services by cluster"
        aria-rowcount={model.rows.length + 1}
        onKeyDown={onKeyDown}
      >
        <thead>
          <tr>
            <th scope="col" class="sticky">
              Service
            </th>
            <th scope="col">Origin</th>
            <th scope="col">Version</th>
            <th scope="col">Skew</th>
            {model.columns.map((c) => (
              <th
                scope="col"
                key={c.cluster}
                data-cluster={c.cluster}
                class={c.stale ? "state-stale" : ""}
              >
                {c.cluster}
                {c.stale ? " (stale)" : ""}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {model.rows.map((row, r) => (
            <tr key={row.service} data-service={row.service}>
              <th scope="row" class="sticky" {...cellProps(r, 0)}>
                <span class="svc">{row.service}</span>
                <StateTag state={row.state} />
              </th>
              <td {...cellProps(r, 1)}>{row.origin || "—"}</td>
              <td class="mono" title={row.version} {...cellProps(r, 2)}>
                {row.short}
              </td>
              <td {...cellProps(r, 3)}>{row.skew}</td>
              {row.cells.map((cell, c) => (
                <td
                  key={cell.cluster}
                  class={`cell ${cell.state === undefined ? "" : `state-${cell.state}`}`}
                  data-cluster={cell.cluster}
                  data-state={cell.state}
                  title={cell.title}
                  {...cellProps(r, LEAD_COLUMNS + c)}
                >
                  <Cell cell={cell} />
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
