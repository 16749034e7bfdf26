/**
 * The Explain view's choice of view, pure: the registrar's effective view,
 * one origin's projections, or one agent's route table (`aetherctl
 * dashboard --agent NAME=URL`, `GET /agents/NAME/routes`), and what the
 * view says about it: its title, the projections an agent's table gives the
 * evaluator (its `@mesh` record included), and which source decided the
 * destination's entry, in `aetherctl explain --agent`'s words.
 */

import type { ServiceConfigProjection } from "../../../../../gen/aether/registry/v1/projection_pb.js";
import {
  type AgentRouteEntry,
  describeRouteSource,
  findAgentRoute,
} from "../../../../../services/common/agent-route-parse.js";

/** What the request is evaluated against. */
export type ViewChoice =
  | { readonly kind: "effective" }
  | { readonly kind: "origin"; readonly cluster: string }
  | { readonly kind: "agent"; readonly name: string };

/**
 * The view a form's `origin` and `agent` fields choose (trimmed; an agent
 * first: the form does not let both be set, {@link viewConflict} says so
 * when a URL does).
 */
export function viewChoiceOf(form: {
  readonly origin: string;
  readonly agent: string;
}): ViewChoice {
  const agent = form.agent.trim();
  const origin = form.origin.trim();
  if (agent !== "") return { kind: "agent", name: agent };
  if (origin !== "") return { kind: "origin", cluster: origin };
  return { kind: "effective" };
}

/** The problem of a form that names both an origin and an agent; undefined otherwise. */
export function viewConflict(form: {
  readonly origin: string;
  readonly agent: string;
}): string | undefined {
  return form.origin.trim() !== "" && form.agent.trim() !== ""
    ? "choose an origin cluster or an agent, not both (an agent holds one projection per service)"
    : undefined;
}

/** How the view is named in the sentence above the form. */
export function viewTitle(choice: ViewChoice): string {
  switch (choice.kind) {
    case "effective":
      return "effective view";
    case "origin":
      return `projections of origin ${choice.cluster}`;
    case "agent":
      return `route table of agent ${choice.name}`;
  }
}

/** The projections of an agent's route table, as the evaluator's view (the `@mesh` record too). */
export function agentProjections(entries: readonly AgentRouteEntry[]): ServiceConfigProjection[] {
  return entries.map((entry) => entry.projection);
}

/**
 * Which of the agent's entries decided `service`, as `aetherctl explain
 * --agent` says it: `local, from cluster west (version sha256:…)` (the
 * cluster's own routes, over anything imported) or `imported, from origin
 * hub version V`; or that the agent does not route it.
 */
export function agentRouteLine(
  name: string,
  entries: readonly AgentRouteEntry[],
  service: string,
): string {
  const entry = findAgentRoute(entries, service);
  if (entry === undefined) {
    return `Agent ${name} does not route ${service} (not in its dependency set, or no config for it): requests go to the service itself.`;
  }
  const override = entry.source === "local" ? ": the cluster's local override" : "";
  return `Agent ${name}'s entry for ${service}: ${describeRouteSource(entry)}${override}.`;
}

/**
 * The agents' names from the dashboard's `GET /agents` answer
 * (`{"agents": ["east", "west"]}`); throws an Error saying what is wrong
 * when it is not such a document.
 */
export function agentsFromJson(text: string): string[] {
  const document: unknown = JSON.parse(text);
  const agents = (document as { agents?: unknown } | null)?.agents;
  if (!Array.isArray(agents) || !agents.every((name) => typeof name === "string")) {
    throw new Error('not a list of agents: no "agents" array of names');
  }
  return agents;
}
