/**
 * An agent's route table, as `agent-route-parse.ts` reads it, written again
 * as the agent's own `GET /routes` document (what `aetherctl dashboard`
 * passes on to the console). Apart from the parser so that the console's
 * bundle does not take in the route merge. Pure.
 */
import type { AgentRouteEntry } from "./agent-route-parse.js";
import { routeTableToJson } from "./route-merge.js";
import { MESH_RECORD } from "./service-name.js";

/**
 * The `/routes` document of `entries` (as {@link parseAgentRoutes} returns
 * them: the `@mesh` entry, when there is one, becomes `meshDefaults` again),
 * the text the agent itself would write; parsing it gives `entries` back.
 */
export function agentRoutesToJson(entries: readonly AgentRouteEntry[]): string {
  const mesh = entries.find((entry) => entry.service === MESH_RECORD);
  const meshConfig = mesh?.projection.meshConfig;
  return routeTableToJson({
    services: entries
      .filter((entry) => entry.service !== MESH_RECORD)
      .map((entry) => ({ ...entry, resolution: "" })),
    ...(mesh === undefined || meshConfig === undefined
      ? {}
      : {
          meshDefaults: {
            source: mesh.source,
            origin: mesh.origin,
            version: mesh.version,
            config: meshConfig,
            projection: mesh.projection,
          },
        }),
  });
}
