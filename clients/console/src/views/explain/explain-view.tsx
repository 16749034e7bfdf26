/**
 * The Explain view (`#/explain?method=GET&url=…`): the request form, whose
 * fields live in the URL's query (a decision can be linked), and the
 * decision, evaluated in the browser by the evaluator `aetherctl explain`
 * and the agent use (`services/common/explain-decide.ts`) against the
 * effective view, one origin's projections or one agent's route table
 * (through the dashboard's `/agents`), fetched when the query asks.
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import type { ServiceConfigProjection } from "../../../../../gen/aether/registry/v1/projection_pb.js";
import { type Explanation, explainInView } from "../../../../../services/common/explain-decide.js";
import { ExplainInputError } from "../../../../../services/common/explain-target.js";
import { formatRoute } from "../../route.js";
import { useLive } from "../../use-live.js";
import type { ViewProps } from "../../view-props.js";
import { agentProjections, agentRouteLine, viewChoiceOf, viewTitle } from "./explain-agent.js";
import { fetchAgents, fetchAgentTable, fetchView } from "./explain-fetch.js";
import { ExplainFormView } from "./explain-form.js";
import {
  type ExplainForm,
  formFromQuery,
  formTarget,
  formToQuery,
  randomDescription,
} from "./explain-model.js";
import { ExplainResult } from "./explain-result.js";
import "./explain.css";

/** What the view shows under the form. */
type Outcome =
  | { readonly state: "idle" }
  | { readonly state: "loading" }
  | { readonly state: "error"; readonly message: string; readonly field?: string }
  | {
      readonly state: "done";
      readonly explanation: Explanation;
      readonly random: string;
      /** With an agent's table: which of its entries decided the destination. */
      readonly agentRoute: string | undefined;
    };

/** The projections of the view `form` chooses, and with an agent the line about its entry. */
async function readChoice(
  client: ViewProps["client"],
  form: ExplainForm,
  signal: AbortSignal,
): Promise<{
  projections: ServiceConfigProjection[];
  agentRoute?: (service: string) => string;
}> {
  const choice = viewChoiceOf(form);
  if (choice.kind !== "agent") {
    const origin = choice.kind === "origin" ? choice.cluster : "";
    return { projections: await fetchView(client, origin, signal) };
  }
  const entries = await fetchAgentTable(choice.name, signal);
  return {
    projections: agentProjections(entries),
    agentRoute: (service) => agentRouteLine(choice.name, entries, service),
  };
}

/** The Explain view. */
export function ExplainView({ client, live, route, navigate }: ViewProps) {
  const asked = useMemo(() => formFromQuery(route.query), [route.query]);
  const askedKey = formatRoute({ view: "explain", query: formToQuery(asked) });
  const [form, setForm] = useState<ExplainForm>(asked);
  const [outcome, setOutcome] = useState<Outcome>({ state: "idle" });
  const [agents, setAgents] = useState<readonly string[]>([]);
  const state = useLive(live);
  const origins = useMemo(
    () => [...new Set([...state.projections.values()].map((p) => p.originCluster))].sort(),
    [state.projections],
  );

  // The dashboard's agents, once (an older dashboard, or none: no Agent choice).
  useEffect(() => {
    const abort = new AbortController();
    fetchAgents(abort.signal).then(setAgents, () => setAgents([]));
    return () => abort.abort();
  }, []);

  // A new query (a submit, a link, Back): show its form and evaluate it.
  useEffect(() => {
    setForm(asked);
    const request = formTarget(asked);
    if (asked.url.trim() === "") return setOutcome({ state: "idle" });
    if (!request.ok) {
      return setOutcome({ state: "error", message: request.error, field: request.field });
    }
    const abort = new AbortController();
    setOutcome({ state: "loading" });
    readChoice(client, asked, abort.signal).then(
      ({ projections, agentRoute }) => {
        try {
          const explanation = explainInView(request.target, projections, request.random());
          setOutcome({
            state: "done",
            explanation,
            random: randomDescription(asked),
            agentRoute: agentRoute?.(explanation.target.service),
          });
        } catch (error) {
          if (!(error instanceof ExplainInputError)) throw error;
          setOutcome({ state: "error", message: error.message, field: error.field });
        }
      },
      (error: unknown) => {
        if (abort.signal.aborted) return;
        setOutcome({ state: "error", message: `cannot read the view: ${String(error)}` });
      },
    );
    return () => abort.abort();
  }, [askedKey, client]);

  const submit = () => navigate(formatRoute({ view: "explain", query: formToQuery(form) }));
  return (
    <section aria-labelledby="view-title" class="explain">
      <h1 id="view-title">Explain</h1>
      <p class="muted">
        What a caller's proxy does with a request, decided here by the same evaluator as{" "}
        <span class="mono">aetherctl explain</span>, against the {viewTitle(viewChoiceOf(asked))}.
      </p>
      <ExplainFormView
        form={form}
        onChange={setForm}
        onSubmit={submit}
        origins={origins}
        agents={agents}
        invalid={outcome.state === "error" ? outcome.field : undefined}
        errorId="explain-error"
      />
      <div aria-live="polite">
        {outcome.state === "loading" && <p class="muted">Evaluating…</p>}
        {outcome.state === "error" && (
          <p class="error" role="alert" id="explain-error">
            {outcome.message}
          </p>
        )}
        {outcome.state === "done" && (
          <ExplainResult
            explanation={outcome.explanation}
            random={outcome.random}
            agentRoute={outcome.agentRoute}
          />
        )}
      </div>
    </section>
  );
}
