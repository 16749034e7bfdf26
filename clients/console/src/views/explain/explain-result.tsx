/**
 * An explained request: with an agent's table, which of its entries decided
 * it; the decision's rows (the route, rule, match and backend that decided it
 * highlighted), the matched rule's backends as
 * shares with the chosen one marked, and a link to the service's view.
 */
import type { Explanation } from "../../../../../services/common/explain-decide.js";
import { formatRoute } from "../../route.js";
import { decisionRows, percentText, weightedChoices } from "./explain-rows.js";

/**
 * The decision for one request; `random` names the pick's source (`seeded
 * 42`), `agentRoute` (with an agent's table) which of its entries decided it.
 */
export function ExplainResult({
  explanation,
  random,
  agentRoute,
}: {
  explanation: Explanation;
  random: string;
  agentRoute?: string | undefined;
}) {
  const rows = decisionRows(explanation);
  const choices = weightedChoices(explanation);
  const service = explanation.target.service;
  return (
    <section class="explain-result panel" aria-labelledby="decision-title">
      <h2 id="decision-title">
        Decision:{" "}
        <span class={`outcome outcome-${explanation.decision.outcome}`}>
          {explanation.decision.outcome}
        </span>
      </h2>
      {agentRoute !== undefined && <p class="agent-route">{agentRoute}</p>}
      <dl class="decision">
        {rows.map((row) => (
          <div key={row.key} data-row={row.key} class={row.highlight ? "highlight" : undefined}>
            <dt>{row.label}</dt>
            <dd>
              {row.lines.length === 1 ? (
                row.lines[0]
              ) : (
                <ol>
                  {row.lines.map((line) => (
                    <li key={line}>{line}</li>
                  ))}
                </ol>
              )}
            </dd>
          </div>
        ))}
      </dl>
      {choices.length > 1 && (
        <table class="choices">
          <caption>Weighted backends of the rule (pick: {random})</caption>
          <thead>
            <tr>
              <th scope="col">Backend</th>
              <th scope="col">Weight</th>
              <th scope="col">Share</th>
            </tr>
          </thead>
          <tbody>
            {choices.map((choice) => (
              <tr key={choice.address} class={choice.chosen ? "chosen" : undefined}>
                <td class="mono">
                  {choice.address}
                  {choice.chosen ? " (chosen)" : ""}
                </td>
                <td>{choice.weight}</td>
                <td>
                  <span class="bar-track" aria-hidden="true">
                    <span class="bar" style={{ width: `${choice.percent}%` }} />
                  </span>
                  {percentText(choice.percent)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {service !== "" && (
        <p>
          <a href={formatRoute({ view: "service", service })}>Open {service} in the service view</a>
        </p>
      )}
    </section>
  );
}
