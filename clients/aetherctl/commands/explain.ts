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
 * A URL whose host is not a service's DNS name selects the service whose
 * VirtualHost names match it (`serviceForHost`, over every projection of
 * the view or the agent's table), printed as `virtual host`; `-o json`
 * adds it as `virtualHost`.
 * The mesh defaults (the `@mesh` record, from the same view, origin or
 * agent as the service) are the evaluator's `meshDefaults`: the request
 * timeout and retry in effect say when they are the defaults', and the
 * record is printed as `mesh defaults` (`-o json`: `meshDefaults`).
 */
import { toJson } from "@bufbuild/protobuf";
import { ConfigView } from "../../../gen/aether/registry/v1/config_service_pb.js";
import {
  BackendTlsSchema,
  HttpFilterSchema,
  MeshConfigSchema,
  type ServiceConfigProjection,
} from "../../../gen/aether/registry/v1/projection_pb.js";
import { findAgentRoute } from "../../../services/common/agent-route-parse.js";
import { backendTlsFor } from "../../../services/common/backend-tls-select.js";
import { evaluate } from "../../../services/common/evaluator.js";
import { resolveTargetService } from "../../../services/common/explain-decide.js";
import { ExplainInputError } from "../../../services/common/explain-target.js";
import { httpFiltersForPort } from "../../../services/common/http-filter-selection.js";
import { MESH_RECORD } from "../../../services/common/service-name.js";
import { UsageError } from "../../../services/process/usage-error.js";
import type { ExplainCommand } from "../aetherctl-flags.js";
import { type AgentLookup, agentRouteJson, fetchAgentRoutes } from "../agent-routes.js";
import { type CommandContext, unaryCallOptions } from "../command-context.js";
import { formatExplanation } from "../explain-format.js";
import type { ExplainTarget } from "../explain-request.js";
import { toJsonText } from "../json-output.js";
import type { MeshDefaultsOrigin } from "../mesh-defaults-describe.js";
import { findProjection, listProjections, viewName } from "../registrar-client.js";

/** Runs `aetherctl explain`; resolves with the exit code. */
export async function runExplain(
  context: CommandContext,
  command: ExplainCommand,
): Promise<number> {
  const target = await resolveVirtualHost(context, command);
  let projection: ServiceConfigProjection | undefined;
  let agent: AgentLookup | undefined;
  let agentEntries: Awaited<ReturnType<typeof fetchAgentRoutes>> | undefined;
  let meshDefaults: MeshDefaultsOrigin | undefined;
  if (command.agent === undefined) {
    // The mesh record from the same view (or origin) as the service's projection.
    const [found, mesh] = await Promise.all(
      [target.service, MESH_RECORD].map((record) =>
        findProjection(context.client, record, command.origin, unaryCallOptions(context)),
      ),
    );
    projection = found;
    if (mesh?.meshConfig !== undefined) {
      meshDefaults = { record: mesh, view: viewName(command.origin) };
    }
  } else {
    agentEntries = await fetchAgentRoutes(command.agent, {
      timeoutMs: context.global.timeoutMs,
      signal: context.signal,
    });
    agent = { url: command.agent, entry: findAgentRoute(agentEntries, target.service) };
    projection = agent.entry?.projection;
    const mesh = findAgentRoute(agentEntries, MESH_RECORD);
    if (mesh !== undefined) {
      meshDefaults = { record: mesh.projection, view: `agent ${command.agent}, ${mesh.source}` };
    }
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
    meshDefaults: meshDefaults?.record.meshConfig,
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
          ...(target.virtualHost === undefined ? {} : { virtualHost: target.virtualHost }),
          ...(meshDefaults === undefined ? {} : { meshDefaults: meshDefaultsJson(meshDefaults) }),
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
          ...(meshDefaults === undefined ? {} : { meshDefaults }),
        }),
  );
  return 0;
}

/**
 * `-o json`'s `meshDefaults`: the mesh record's origin, version and
 * MeshConfig (proto JSON); the same in every view that holds the same record
 * (an agent's source is `agentRoute`'s business).
 */
function meshDefaultsJson(mesh: MeshDefaultsOrigin) {
  const { record } = mesh;
  return {
    origin: record.originCluster,
    version: record.version,
    config: record.meshConfig === undefined ? null : toJson(MeshConfigSchema, record.meshConfig),
  };
}

/**
 * The command's target with its service, looked up by VirtualHost name when
 * the URL's host is not a service's DNS name; a UsageError when no
 * projection carries the name.
 */
async function resolveVirtualHost(
  context: CommandContext,
  command: ExplainCommand,
): Promise<ExplainTarget> {
  const { target } = command;
  const name = target.virtualHostName;
  if (name === undefined) return target;
  const projections =
    command.agent === undefined
      ? (
          await listProjections(
            context.client,
            { services: [], origin: command.origin, view: ConfigView.EFFECTIVE },
            unaryCallOptions(context),
          )
        ).projections
      : (
          await fetchAgentRoutes(command.agent, {
            timeoutMs: context.global.timeoutMs,
            signal: context.signal,
          })
        ).map((entry) => entry.projection);
  try {
    return resolveTargetService(target, projections);
  } catch (error) {
    if (error instanceof ExplainInputError) throw new UsageError(error.message, "explain");
    throw error;
  }
}
