/**
 * aetherctl's only way to the registrar: the generated ConfigService client
 * over Connect (HTTP/1.1), plus the two read patterns its commands share:
 * reading every page of a listing, and finding one service's projection.
 */
import { Agent as HttpsAgent } from "node:https";
import { type CallOptions, type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ConfigService, ConfigView } from "../../gen/aether/registry/v1/config_service_pb.js";
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import type { ClientTlsOptions } from "../../services/runtime/tls/client-tls.js";

/** The generated ConfigService client. */
export type RegistrarClient = Client<typeof ConfigService>;

/** The page size aetherctl asks for: the largest the contract allows, so that few round trips are needed. */
export const LIST_PAGE_SIZE = 1000;

/**
 * Creates the generated client for the registrar at `baseUrl` (Connect
 * protocol, HTTP/1.1), over TLS with `tlsOptions` (see
 * `services/runtime/tls/client-tls.ts`) for an https:// URL. A TLS client
 * has its own connection pool: Node's global one keys connections by
 * `ca`, `cert` and `key` but not by `secureContext` or
 * `checkServerIdentity`, so it would hand a connection verified under other
 * options to this client.
 */
export function createRegistrarClient(
  baseUrl: string,
  tlsOptions?: ClientTlsOptions,
): RegistrarClient {
  const transport = createConnectTransport({
    baseUrl,
    httpVersion: "1.1",
    ...(tlsOptions === undefined
      ? {}
      : { nodeOptions: { ...tlsOptions, agent: new HttpsAgent({ keepAlive: true }) } }),
  });
  return createClient(ConfigService, transport);
}

/** One page of a listing, as ListConfig and ListAllConfig answer. */
export interface ListingPage {
  readonly projections: ServiceConfigProjection[];
  readonly nextPageToken: string;
  readonly revision: bigint;
}

/** A whole listing: every page's projections, and the store revision they were read at. */
export interface Listing {
  readonly projections: ServiceConfigProjection[];
  readonly revision: bigint;
}

/**
 * Reads every page of a listing: calls `fetchPage` with an empty token, then
 * with each `nextPageToken` until one is empty. Every page is read at the
 * first page's revision (the contract guarantees it), so the result is one
 * consistent snapshot.
 */
export async function readAllPages(
  fetchPage: (pageToken: string) => Promise<ListingPage>,
): Promise<Listing> {
  const projections: ServiceConfigProjection[] = [];
  let token = "";
  let revision: bigint | undefined;
  do {
    const page = await fetchPage(token);
    projections.push(...page.projections);
    revision ??= page.revision;
    token = page.nextPageToken;
  } while (token !== "");
  return { projections, revision: revision ?? 0n };
}

/**
 * Lists projections: one origin's (ListConfig) when `origin` is set, else
 * every origin's in `view` (ListAllConfig); only `services` when not empty.
 */
export function listProjections(
  client: RegistrarClient,
  query: { services: readonly string[]; origin: string | undefined; view: ConfigView },
  callOptions: CallOptions,
): Promise<Listing> {
  const { origin, view } = query;
  const services = [...query.services];
  return readAllPages((pageToken) =>
    origin === undefined
      ? client.listAllConfig({ services, view, pageSize: LIST_PAGE_SIZE, pageToken }, callOptions)
      : client.listConfig(
          { originCluster: origin, services, pageSize: LIST_PAGE_SIZE, pageToken },
          callOptions,
        ),
  );
}

/**
 * Finds one service's projection: the effective winner (ListAllConfig,
 * EFFECTIVE view), or `origin`'s (ListConfig) when set. Resolves undefined
 * when there is none.
 */
export async function findProjection(
  client: RegistrarClient,
  service: string,
  origin: string | undefined,
  callOptions: CallOptions,
): Promise<ServiceConfigProjection | undefined> {
  const listing = await listProjections(
    client,
    { services: [service], origin, view: ConfigView.EFFECTIVE },
    callOptions,
  );
  return listing.projections.find((p) => p.service === service);
}

/** How a projection was chosen, for output: `effective view` or `origin NAME`. */
export function viewName(origin: string | undefined): string {
  return origin === undefined ? "effective view" : `origin ${origin}`;
}
