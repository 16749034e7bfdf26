/** The versions of the service seen while the page is open, newest first, the current one marked. */
import type { HistoryRow } from "./service-history.js";

/** The history table. */
export function ServiceHistory({ rows }: { rows: readonly HistoryRow[] }) {
  return (
    <section aria-labelledby="history-title">
      <h2 id="history-title">Versions seen</h2>
      {rows.length === 0 ? (
        <p class="muted">None yet: the live stream has brought no version of this service.</p>
      ) : (
        <table class="history">
          <thead>
            <tr>
              <th scope="col">Received</th>
              <th scope="col">Version</th>
              <th scope="col">Origin</th>
              <th scope="col">Now</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr
                key={`${row.receivedAt}|${row.origin}|${row.version}`}
                aria-current={row.current ? "true" : undefined}
              >
                <td>{new Date(row.receivedAt).toISOString()}</td>
                <td class="mono">{row.version}</td>
                <td class="mono">{row.origin}</td>
                <td>{row.current ? "current" : ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
