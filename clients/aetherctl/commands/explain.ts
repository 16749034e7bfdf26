/**
 * `aetherctl explain`: fetches the destination service's projection (the
 * effective winner, or `--origin`'s, or with `--agent` the entry of that
 * agent's route table), runs the shared request evaluator on it
 * as the caller's proxy would, and prints the decision with the service's
 * HTTP filters that run for the request (in order), or with `-o json` the
 * evaluator's Decision (with `httpFilters`, proto JSON, when there are some).
 */
import { toJson } from "@bufbuild/protobuf";
import {
  HttpFilterSchema,
  type ServiceConfigProjection,
} from "../../../gen/aether/registry/v1/projection_pb.js";
import { evaluate } from "../../../services/common/evaluator.js";
import { httpFiltersForPort } from "../../../services/common/http-filter-selection.js";
import type { ExplainCommand } from "../aetherctl-flags.js";
import {
  type AgentLookup,
  agentRouteJson,
  fetchAgentRoutes,
  findAgentRoute,
} from "../agent-routes.js";
import { type CommandContext, unaryCallOptions } from "../command-context.js";
import { formatExplanation } from "../explain-format.js";
import { toJsonText } from "../json-output.js";
import { findProjection, viewName } from "../registrar-client.js";

/** Runs `aetherctl explain`; resolves with the exit code. */
export async function runExplain(
  context: CommandContext,
  command: ExplainCommand,
): Promise<number> {
  const { target } = command;
  let projection: ServiceConfigProjection | undefined;
  let agent: AgentLookup | undefined;
  if (command.agent === undefined) {
    projection = await findProjection(
      context.client,
      target.service,
      command.origin,
      unaryCallOptions(context),
    );
  } else {
    const entries = await fetchAgentRoutes(command.agent, {
      timeoutMs: context.global.timeoutMs,
      signal: context.signal,
    });
    agent = { url: command.agent, entry: findAgentRoute(entries, target.service) };
    projection = agent.entry?.projection;
  }
  const decision = evaluate({
    projections: projection === undefined ? [] : [projection],
    request: target.request,
    mesh: {
      service: target.service,
      port: target.port,
      callerNamespace: target.callerNamespace,
      ...(target.portName === undefined ? {} : { portName: target.portName }),
    },
    random: command.random.next,
  });
  const httpFilters = httpFiltersForPort(projection, target.port);
  // The filters run whatever the rule; JSON names them (proto JSON) only when there are some.
  const json = {
    ...decision,
    ...(httpFilters.length === 0
      ? {}
      : { httpFilters: httpFilters.map((f) => toJson(HttpFilterSchema, f)) }),
  };
  context.stdout(
    context.global.output === "json"
      ? toJsonText(agent === undefined ? json : { ...json, agentRoute: agentRouteJson(agent) })
      : formatExplanation({
          target,
          projection,
          view: agent === undefined ? viewName(command.origin) : `agent ${agent.url}`,
          decision,
          random: command.random.description,
          httpFilters,
          ...(agent === undefined ? {} : { agent }),
        }),
  );
  return 0;
}
