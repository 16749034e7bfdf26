/**
 * The Live view (`#/live`): the WatchConfig stream's state in words, its
 * revision, and the latest changes, newest first, in a list of fixed row
 * height and bounded length (`live-model.ts`), so rows arriving never move
 * anything else on the page.
 */
import { useLive } from "../../use-live.js";
import type { ViewProps } from "../../view-props.js";
import { type ChangeRow, changeRows, MAX_CHANGE_ROWS, summarizeStream } from "./live-model.js";
import "./live-view.css";

function ChangeLine({ row }: { row: ChangeRow }) {
  return (
    <tr data-service={row.service} data-type={row.type}>
      <td class="mono">{row.time}</td>
      <td>{row.href === undefined ? row.service : <a href={row.href}>{row.service}</a>}</td>
      <td>{row.origin}</td>
      <td class="mono">{row.version}</td>
      <td class={`live-type live-type-${row.type}`}>{row.type}</td>
    </tr>
  );
}

/** The Live view. */
export function LiveView({ live }: ViewProps) {
  const state = useLive(live);
  const summary = summarizeStream(state);
  const rows = changeRows(state.changes);
  return (
    <section class="live" aria-labelledby="view-title" data-connection={summary.connection}>
      <h1 id="view-title">Live</h1>
      <div class="panel live-status" aria-live="polite">
        <p class={`live-headline live-${summary.connection}`} title={summary.headline}>
          {summary.headline}
        </p>
        <p class="live-resumption muted">{summary.resumption}</p>
        <p class="live-revision">
          revision <span class="mono">{summary.revision}</span>
        </p>
      </div>
      <h2>Latest changes</h2>
      <div class="live-changes panel">
        <table>
          <caption class="muted">
            {rows.length === 0
              ? "No change since the page opened."
              : `The ${rows.length} latest changes, newest first (at most ${MAX_CHANGE_ROWS}).`}
          </caption>
          <thead>
            <tr>
              <th scope="col">time (UTC)</th>
              <th scope="col">service</th>
              <th scope="col">origin</th>
              <th scope="col">version</th>
              <th scope="col">change</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <ChangeLine key={row.key} row={row} />
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
