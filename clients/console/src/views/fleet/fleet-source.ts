/**
 * Where the fleet view's data comes from: GetFleetStatus (limit 1000), or,
 * when the registrar answers Unimplemented (older than the RPC), every
 * origin's stored projections (ListAllConfig ALL_ORIGINS, paged) and
 * GetConfigStatus, as the same answer (`fleet-fallback.ts`).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { ConfigView } from "../../../../../gen/aether/registry/v1/config_service_pb.js";
import type { GetFleetStatusResponse } from "../../../../../gen/aether/registry/v1/fleet_pb.js";
import type { ConfigClient } from "../../api.js";
import { originsAsFleet, type StoredHeader } from "./fleet-fallback.js";
import { type FleetFilters, fleetRequest } from "./fleet-filters.js";

/** An answer and how it was made. */
export interface FleetSnapshot {
  readonly response: GetFleetStatusResponse;
  /** `fleet`: GetFleetStatus; `origins`: the fallback (the registrar lacks the RPC). */
  readonly source: "fleet" | "origins";
}

async function storedHeaders(client: ConfigClient, signal: AbortSignal): Promise<StoredHeader[]> {
  const headers: StoredHeader[] = [];
  let pageToken = "";
  do {
    const page = await client.listAllConfig(
      { view: ConfigView.ALL_ORIGINS, pageSize: 1000, pageToken },
      { signal },
    );
    for (const p of page.projections) {
      headers.push({ service: p.service, originCluster: p.originCluster, version: p.version });
    }
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return headers;
}

/** The fallback's answer for `filters`. */
async function fromOrigins(
  client: ConfigClient,
  filters: FleetFilters,
  signal: AbortSignal,
): Promise<FleetSnapshot> {
  const [stored, status] = await Promise.all([
    storedHeaders(client, signal),
    client.getConfigStatus({}, { signal }),
  ]);
  return { response: originsAsFleet(stored, status, Date.now(), filters), source: "origins" };
}

/**
 * The fleet for `filters`. `useFallback` skips GetFleetStatus (once it was
 * found missing); a registrar answering Unimplemented gets the fallback.
 * Other errors reject.
 */
export async function loadFleet(
  client: ConfigClient,
  filters: FleetFilters,
  signal: AbortSignal,
  useFallback: boolean,
): Promise<FleetSnapshot> {
  if (useFallback) return fromOrigins(client, filters, signal);
  try {
    return {
      response: await client.getFleetStatus(fleetRequest(filters), { signal }),
      source: "fleet",
    };
  } catch (error) {
    if (ConnectError.from(error).code !== Code.Unimplemented) throw error;
    return fromOrigins(client, filters, signal);
  }
}
