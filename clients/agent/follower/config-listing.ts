/**
 * The poll's I/O: every page of `ListAllConfig` for a dependency set (view
 * ALL_ORIGINS, the agent resolves trust and conflicts itself), all at one
 * registrar revision, as received changes for the candidate set.
 */
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import {
  type ConfigService,
  ConfigView,
} from "../../../gen/aether/registry/v1/config_service_pb.js";
import type { ReceivedChange } from "./candidate-set.js";
import { ProtocolError } from "./protocol-error.js";

/** Options of {@link listConfig}. */
export interface ConfigListingOptions {
  /** The generated client (only `listAllConfig` is used). */
  readonly client: Pick<Client<typeof ConfigService>, "listAllConfig">;
  /** The services to list. */
  readonly services: readonly string[];
  /** The page size. */
  readonly pageSize: number;
  /** The timeout of each page request, in milliseconds. */
  readonly requestTimeoutMs: number;
  /** Cancels the listing. */
  readonly signal: AbortSignal;
}

/** A complete listing. */
export interface ConfigListing {
  /** The registrar revision every page was read at. */
  readonly revision: bigint;
  /** One put per listed projection, in the registrar's order. */
  readonly changes: ReceivedChange[];
}

/**
 * Lists every page at one revision. When that revision is compacted between
 * pages (`OutOfRange`) it lists again, at most twice more; pages at
 * different revisions are a {@link ProtocolError}. Rejects with the error of
 * the failed request otherwise.
 */
export async function listConfig(options: ConfigListingOptions): Promise<ConfigListing> {
  const { client, services, pageSize, requestTimeoutMs, signal } = options;
  for (let attempt = 0; ; attempt++) {
    const changes: ReceivedChange[] = [];
    let revision: bigint | undefined;
    let pageToken = "";
    try {
      do {
        const page = await client.listAllConfig(
          { services: [...services], view: ConfigView.ALL_ORIGINS, pageSize, pageToken },
          { signal, timeoutMs: requestTimeoutMs },
        );
        revision ??= page.revision;
        if (page.revision !== revision) {
          throw new ProtocolError(
            `pages of one listing at revisions ${revision} and ${page.revision}`,
          );
        }
        for (const projection of page.projections) {
          changes.push({
            kind: "put",
            origin: projection.originCluster,
            service: projection.service,
            projection,
          });
        }
        pageToken = page.nextPageToken;
      } while (pageToken !== "");
      return { revision: revision ?? 0n, changes };
    } catch (error) {
      // The listing's revision was compacted between pages: list again.
      if (ConnectError.from(error).code !== Code.OutOfRange || attempt >= 2) throw error;
    }
  }
}
