/**
 * The view the Explain form evaluates against, fetched whole: the effective
 * view (ListAllConfig, EFFECTIVE, every page) or one origin cluster's
 * projections (ListConfig, every page), as `aetherctl explain` (and its
 * `--origin`) reads them. Thin: I/O only.
 */

import { ConfigView } from "../../../../../gen/aether/registry/v1/config_service_pb.js";
import type { ServiceConfigProjection } from "../../../../../gen/aether/registry/v1/projection_pb.js";
import type { ConfigClient } from "../../api.js";

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
