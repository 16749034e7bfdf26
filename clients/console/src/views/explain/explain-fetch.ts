/**
 * The view the Explain form evaluates against, fetched whole: the effective
 * view (ListAllConfig, EFFECTIVE, every page) or one origin cluster's
 * projections (ListConfig, every page), as `aetherctl explain` (and its
 * `--origin`) reads them; or an agent's route table through the
 * dashboard (`GET /agents/NAME/routes`), as `--agent` reads it, and the
 * agents there are (`GET /agents`). Thin: I/O only.
 */

import { ConfigView } from "../../../../../gen/aether/registry/v1/config_service_pb.js";
import type { ServiceConfigProjection } from "../../../../../gen/aether/registry/v1/projection_pb.js";
import {
  type AgentRouteEntry,
  parseAgentRoutes,
} from "../../../../../services/common/agent-route-parse.js";
import type { ConfigClient } from "../../api.js";
import { agentsFromJson } from "./explain-agent.js";

const PAGE_SIZE = 1000;

/** Every projection of the effective view (`origin` empty) or of origin `origin`. */
export async function fetchView(
  client: ConfigClient,
  origin: string,
  signal: AbortSignal,
): Promise<ServiceConfigProjection[]> {
  const projections: ServiceConfigProjection[] = [];
  let pageToken = "";
  do {
    const page =
      origin === ""
        ? await client.listAllConfig(
            { services: [], view: ConfigView.EFFECTIVE, pageSize: PAGE_SIZE, pageToken },
            { signal },
          )
        : await client.listConfig(
            { originCluster: origin, services: [], pageSize: PAGE_SIZE, pageToken },
            { signal },
          );
    projections.push(...page.projections);
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return projections;
}

/** A GET of the dashboard's own `path`; the body, or an Error with the status and the reason. */
async function getText(path: string, signal: AbortSignal): Promise<string> {
  const response = await fetch(path, { signal, headers: { accept: "application/json" } });
  const body = await response.text();
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${body.trim()}`);
  return body;
}

/** The agents the dashboard reads route tables from (`GET /agents`). */
export async function fetchAgents(signal: AbortSignal): Promise<string[]> {
  return agentsFromJson(await getText("/agents", signal));
}

/** Agent `name`'s route table (`GET /agents/NAME/routes`), parsed. */
export async function fetchAgentTable(
  name: string,
  signal: AbortSignal,
): Promise<AgentRouteEntry[]> {
  return parseAgentRoutes(await getText(`/agents/${encodeURIComponent(name)}/routes`, signal));
}
