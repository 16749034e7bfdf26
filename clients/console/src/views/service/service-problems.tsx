/** Where the service's projections are refused and why (a table), or that nobody refuses them. */
import type { RejectionRow } from "./service-rejections.js";

/** The rejections table; `pending` names what has not answered yet or failed. */
export function ServiceProblems({
  rows,
  pending,
}: {
  rows: readonly RejectionRow[];
  pending: string;
}) {
  return (
    <section aria-labelledby="rejections-title">
      <h2 id="rejections-title">Rejections</h2>
      {pending === "" ? null : <p class="muted">{pending}</p>}
      {rows.length === 0 ? (
        <p class="muted">No registrar or agent refuses a projection of this service.</p>
      ) : (
        <table class="rejections">
          <thead>
            <tr>
              <th scope="col">Where</th>
              <th scope="col">Origin</th>
              <th scope="col">Version</th>
              <th scope="col">Reason</th>
              <th scope="col">Message</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={`${row.where}|${row.origin}|${row.version}|${row.reason}`}>
                <td>{row.where}</td>
                <td class="mono">{row.origin}</td>
                <td class="mono">{row.version}</td>
                <td class="error">{row.reason}</td>
                <td>{row.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
