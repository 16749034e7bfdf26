/**
 * `aetherctl explain`: fetches the destination service's projection (the
 * effective winner, or `--origin`'s, or with `--agent` the entry of that
 * agent's route table), runs the shared request evaluator on it
 * as the caller's proxy would, and prints the decision with the service's
 * HTTP filters that run for the request (in order), or with `-o json` the
 * evaluator's Decision (with `httpFilters`, proto JSON, when there are some).
 * The backend TLS settings that apply to the chosen backend come from the
 * backend service's own projection (fetched too when the backend is another
 * service); `-o json` adds them as `backendTls`.
 */
import { toJson } from "@bufbuild/protobuf";
import {
  BackendTlsSchema,
  HttpFilterSchema,
  type ServiceConfigProjection,
} from "../../../gen/aether/registry/v1/projection_pb.js";
import { backendTlsFor } from "../../../services/common/backend-tls-select.js";
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
  let agentEntries: Awaited<ReturnType<typeof fetchAgentRoutes>> | undefined;
  if (command.agent === undefined) {
    projection = await findProjection(
      context.client,
      target.service,
      command.origin,
      unaryCallOptions(context),
    );
  } else {
    agentEntries = await fetchAgentRoutes(command.agent, {
      timeoutMs: context.global.timeoutMs,
      signal: context.signal,
    });
    agent = { url: command.agent, entry: findAgentRoute(agentEntries, target.service) };
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
  const backend = decision.backend;
  let backendProjection = projection;
  if (backend !== undefined && backend.service !== target.service && backend.service !== "") {
    backendProjection =
      command.agent === undefined
        ? await findProjection(
            context.client,
            backend.service,
            command.origin,
            unaryCallOptions(context),
          )
        : findAgentRoute(agentEntries ?? [], backend.service)?.projection;
  }
  const backendTls =
    backend === undefined ? undefined : backendTlsFor(backendProjection, backend.port);
  // The filters run whatever the rule; JSON names them (proto JSON) only when there are some.
  context.stdout(
    context.global.output === "json"
      ? toJsonText({
          ...decision,
          ...(httpFilters.length === 0
            ? {}
            : { httpFilters: httpFilters.map((f) => toJson(HttpFilterSchema, f)) }),
          ...(agent === undefined ? {} : { agentRoute: agentRouteJson(agent) }),
          ...(backendTls === undefined ? {} : { backendTls: toJson(BackendTlsSchema, backendTls) }),
        })
      : formatExplanation({
          target,
          projection,
          view: agent === undefined ? viewName(command.origin) : `agent ${agent.url}`,
          decision,
          random: command.random.description,
          httpFilters,
          ...(agent === undefined ? {} : { agent }),
          ...(backendTls === undefined ? {} : { backendTls }),
        }),
  );
  return 0;
}
