/**
 * The ConfigService implementation, as thin handlers: each checks its request
 * (`request-checks.ts`), serves it from the listing (`listing.ts`: pages of
 * one revision, from the synced cache once the store answered a ping, or
 * from coalesced and limited store reads, so they fail fast with UNAVAILABLE
 * when it is down, and with UNAVAILABLE and retry advice when too many
 * listings need the store at once) or from a watch stream (`watch-stream.ts`:
 * served from the config cache), maps what failed to the ConnectError code
 * the contract promises, and counts the RPC.
 *
 * Projections travel as the store holds them: a response encoded with the
 * protobuf binary codec carries their stored bytes (see
 * `encoded-messages.ts`), and only a JSON response decodes them.
 */
import { create, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  type ConfigService,
  type ExportStatus,
  type GetConfigStatusResponse,
  GetConfigStatusResponseSchema,
  type ListAllConfigRequest,
  type ListAllConfigResponse,
  ListAllConfigResponseSchema,
  type ListConfigRequest,
  type ListConfigResponse,
  ListConfigResponseSchema,
} from "../../../gen/aether/registry/v1/config_service_pb.js";
import type {
  GetFleetStatusRequest,
  GetFleetStatusResponse,
  ReportAppliedConfigRequest,
  ReportAppliedConfigResponse,
} from "../../../gen/aether/registry/v1/fleet_pb.js";
import type { ImportPolicy } from "../../common/import-policy.js";
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import type { ConfigCache } from "../cache/config-cache.js";
import type { RegistrarMetrics } from "../registrar-metrics.js";
import type { Refusals } from "../server/refusals.js";
import {
  type ConfigStore,
  StoreCompactedError,
  type StoredProjection,
  StoreUnavailableError,
} from "../store/config-store.js";
import { STORE_UNAVAILABLE_MESSAGE, storeUnavailable } from "./client-errors.js";
import { usesBinaryCodec, withEncodedMessages } from "./encoded-messages.js";
import { createKeptListings } from "./kept-listings.js";
import { createListing } from "./listing.js";
import { createPageTokens, type PageTokens } from "./page-token.js";
import { DEFAULT_READ_LIMITS, type ReadLimits } from "./read-admission.js";
import {
  checkListAllConfigRequest,
  checkListConfigRequest,
  checkWatchConfigRequest,
} from "./request-checks.js";
import { summarizeStatus } from "./status-summary.js";
import { createStoreReads, ListReadsBusyError } from "./store-reads.js";
import { createWatchStreams, type WatchStreams } from "./watch-stream.js";

/** The request limits (see `request-checks.ts`), exported here too, where callers have always imported them. */
export { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, MAX_REQUEST_SERVICES } from "./request-checks.js";

/** Options of {@link createConfigService}. */
export interface ConfigServiceOptions {
  /** This registrar's own cluster (the default origin of ListConfig). */
  readonly origin: string;
  /** The store list reads go to. */
  readonly store: ConfigStore;
  /** The cache watch streams are served from. */
  readonly cache: ConfigCache;
  /** The import policy of the EFFECTIVE view. */
  readonly policy: ImportPolicy;
  /** Metrics to update; optional. */
  readonly metrics?: RegistrarMetrics;
  /** Logger; silent by default. */
  readonly logger?: Logger;
  /** Aborted when the server drains: open streams then end cleanly (OK). */
  readonly drainSignal?: AbortSignal;
  /** The interval between keep-alive events on idle streams; default 15000 ms. */
  readonly keepaliveMs?: number;
  /** The most events a stream may have unsent before it is ended; default 50000. */
  readonly maxStreamBacklog?: number;
  /**
   * The most WatchConfig streams open at once; one more is refused with
   * RESOURCE_EXHAUSTED (retry later). Default 2000.
   */
  readonly maxWatchStreams?: number;
  /** Where refused WatchConfig streams are counted and logged; optional. */
  readonly refusals?: Refusals;
  /** The store kind reported by GetConfigStatus; default the store's own. */
  readonly storeKind?: string;
  /**
   * Makes and checks page tokens; default a key of this process's own (see
   * `page-token.ts`: replicas behind one Service should share one).
   */
  readonly pageTokens?: PageTokens;
  /** The export controller's state for GetConfigStatus; undefined means export is off. */
  readonly exportStatus?: () => ExportStatus;
  /**
   * How many store reads list requests may have running and waiting (see
   * `store-reads.ts`); default {@link DEFAULT_READ_LIMITS}.
   */
  readonly readLimits?: ReadLimits;
  /** How long a list read may wait for a slot before it is refused, in milliseconds; default 2000. */
  readonly readWaitMs?: number;
  /**
   * Answers ReportAppliedConfig (the agents' ACK/NACK reports, see
   * `services/registrar/fleet/`); undefined: UNIMPLEMENTED.
   */
  readonly reportApplied?: (
    request: ReportAppliedConfigRequest,
    context: HandlerContext,
  ) => ReportAppliedConfigResponse;
  /** Answers GetFleetStatus (see `services/registrar/fleet/`); undefined: UNIMPLEMENTED. */
  readonly fleetStatus?: (request: GetFleetStatusRequest) => GetFleetStatusResponse;
  /**
   * The WatchConfig streams, when shared with another front (the lane of
   * `watch-lane.ts`); default made here from `cache`, `drainSignal`,
   * `keepaliveMs`, `maxStreamBacklog`, `maxWatchStreams`, `refusals` and
   * `metrics`.
   */
  readonly watches?: WatchStreams;
}

/** How many listing windows (see `kept-listings.ts`) are kept for later pages. */
const KEPT_LISTINGS = 8;
/** How long a listing window is kept after a page was last served from it. */
const KEPT_LISTING_TTL_MS = 30_000;

/**
 * Maps store and validation failures to the ConnectError codes the contract
 * promises; a client that went away is Canceled (logged at debug), anything
 * unexpected is Internal without details (logged at error).
 */
export function toConnectError(error: unknown, logger: Logger): ConnectError {
  if (error instanceof ConnectError) return error;
  if (error instanceof StoreUnavailableError) {
    logger.debug({ err: error.message }, "store unavailable; the client is told without details");
    return storeUnavailable(error);
  }
  if (error instanceof ListReadsBusyError) {
    // Retry advice: HTTP's Retry-After (whole seconds) for Connect clients,
    // gRPC's retry pushback for gRPC clients with a retry policy.
    const metadata = new Headers({
      "retry-after": String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))),
      "grpc-retry-pushback-ms": String(error.retryAfterMs),
    });
    return new ConnectError(error.message, Code.Unavailable, metadata);
  }
  if (error instanceof StoreCompactedError) {
    return new ConnectError(
      `the listing's store revision was compacted (oldest readable revision is ${error.compactRevision}); start the listing again without page_token`,
      Code.OutOfRange,
    );
  }
  if (error instanceof RangeError) {
    return new ConnectError(
      `page_token is not valid for this store: ${error.message}`,
      Code.InvalidArgument,
    );
  }
  if (peerWentAway(error)) {
    // Nobody is left to answer: not a server fault, and no error-level line per vanished client.
    logger.debug({ err: error }, "the client went away while its call was answered");
    return new ConnectError("the client went away", Code.Canceled);
  }
  logger.error({ err: error }, "unexpected error serving ConfigService");
  return new ConnectError("internal error", Code.Internal);
}

/** The error codes of a connection or stream the peer reset or closed while it was written to. */
const PEER_GONE_CODES = new Set([
  "ECONNRESET",
  "EPIPE",
  "ERR_STREAM_DESTROYED",
  "ERR_STREAM_PREMATURE_CLOSE",
  "ERR_STREAM_WRITE_AFTER_END",
  "ERR_HTTP2_INVALID_STREAM",
  "ERR_HTTP2_STREAM_ERROR",
]);

/** Whether `error` says the client's connection or stream went away, not that the server failed. */
function peerWentAway(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && PEER_GONE_CODES.has(code);
}

/**
 * Returns a list response carrying `entries` as its projections: their stored
 * bytes when the response is binary, decoded messages otherwise. An entry
 * whose value is longer than `maxBytes` (the projection byte limit; the
 * cache rejects it as `too_large`) is left out: no reader is ever sent an
 * oversized value, nor the stub a store gives in place of its projection.
 */
function withProjections<T extends ListAllConfigResponse | ListConfigResponse>(
  response: T,
  listed: readonly StoredProjection[],
  binary: boolean,
  maxBytes: number,
): T {
  const entries = listed.filter((entry) => entry.value.length <= maxBytes);
  if (!binary) {
    response.projections = entries.map((entry) => entry.projection);
    return response;
  }
  const field =
    response.$typeName === ListAllConfigResponseSchema.typeName
      ? ListAllConfigResponseSchema.field.projections
      : ListConfigResponseSchema.field.projections;
  return withEncodedMessages(
    response as T & Message,
    field,
    entries.map((entry) => entry.value),
  );
}

/** Creates the ConfigService handlers for `router.service(ConfigService, …)`. */
export function createConfigService(
  options: ConfigServiceOptions,
): ServiceImpl<typeof ConfigService> {
  const { store, cache, policy, metrics } = options;
  const logger = options.logger ?? createSilentLogger();
  const tokens = options.pageTokens ?? createPageTokens();
  const listing = createListing({
    store,
    cache,
    policy,
    kept: createKeptListings({ capacity: KEPT_LISTINGS, ttlMs: KEPT_LISTING_TTL_MS }),
    tokens,
    reads: createStoreReads({
      store,
      limits: options.readLimits ?? DEFAULT_READ_LIMITS,
      waitMs: options.readWaitMs ?? 2_000,
      onOutcome: (outcome) => metrics?.countListRead(outcome),
    }),
  });
  const watches =
    options.watches ??
    createWatchStreams({
      cache,
      drainSignal: options.drainSignal,
      keepaliveMs: options.keepaliveMs,
      maxBacklog: options.maxStreamBacklog,
      maxStreams: options.maxWatchStreams,
      refusals: options.refusals,
      metrics,
    });

  async function listConfig(
    request: ListConfigRequest,
    binary: boolean,
  ): Promise<ListConfigResponse> {
    const page = await listing.keyOrderedPage(
      checkListConfigRequest(request, options.origin, tokens),
    );
    const response = create(ListConfigResponseSchema, {
      nextPageToken: page.nextPageToken,
      revision: BigInt(page.revision),
    });
    return withProjections(response, page.entries, binary, policy.limits.maxBytes);
  }

  async function listAllConfig(
    request: ListAllConfigRequest,
    binary: boolean,
  ): Promise<ListAllConfigResponse> {
    const query = checkListAllConfigRequest(request, tokens);
    // The effective view needs every origin's candidates for a service and is
    // ordered by service, not by key: it pages through a resolved snapshot.
    const page =
      query.view === "all"
        ? await listing.keyOrderedPage(query)
        : await listing.effectivePage(query);
    const response = create(ListAllConfigResponseSchema, {
      nextPageToken: page.nextPageToken,
      revision: BigInt(page.revision),
    });
    return withProjections(response, page.entries, binary, policy.limits.maxBytes);
  }

  async function unary<T>(method: string, run: () => Promise<T>): Promise<T> {
    try {
      const result = await run();
      metrics?.countRpc(method, "ok");
      return result;
    } catch (error) {
      const connectError = toConnectError(error, logger);
      metrics?.countRpc(method, Code[connectError.code] ?? "unknown");
      throw connectError;
    }
  }

  /**
   * The registrar's status; while the store is unavailable after a first
   * sync, the view kept through the loss (`synced` false, `storeError`
   * set). UNAVAILABLE before the first sync: there is nothing to show.
   */
  function getConfigStatus(): GetConfigStatusResponse {
    if (!cache.serving) {
      throw storeUnavailable(
        new StoreUnavailableError(cache.lastError?.message ?? "not synced"),
        cache.lastError === undefined,
      );
    }
    const synced = cache.state === "synced";
    const summary = summarizeStatus({
      entries: cache.entries(),
      rejections: cache.rejections(),
      conflicts: cache.conflicts(),
      controlCluster: policy.controlCluster,
    });
    return create(GetConfigStatusResponseSchema, {
      cluster: options.origin,
      controlCluster: policy.controlCluster ?? "",
      store: options.storeKind ?? store.kind,
      synced,
      storeError: synced ? "" : STORE_UNAVAILABLE_MESSAGE,
      revision: BigInt(cache.revision),
      origins: summary.origins,
      rejections: summary.rejections,
      conflicts: summary.conflicts,
      export: options.exportStatus?.() ?? {
        enabled: false,
        disabledReason: "no --export-source configured",
      },
    });
  }

  function notServed(method: string): never {
    throw new ConnectError(`this registrar does not serve ${method}`, Code.Unimplemented);
  }

  return {
    async getConfigStatus() {
      return unary("GetConfigStatus", async () => getConfigStatus());
    },
    listConfig(request, context) {
      return unary("ListConfig", () => listConfig(request, usesBinaryCodec(context)));
    },
    listAllConfig(request, context) {
      return unary("ListAllConfig", () => listAllConfig(request, usesBinaryCodec(context)));
    },
    async *watchConfig(request, context: HandlerContext) {
      let code = "ok";
      try {
        const query = checkWatchConfigRequest(request);
        yield* watches.open(query, context.signal, usesBinaryCodec(context));
      } catch (error) {
        const connectError = toConnectError(error, logger);
        code = Code[connectError.code] ?? "unknown";
        throw connectError;
      } finally {
        metrics?.countRpc("WatchConfig", code);
      }
    },
    reportAppliedConfig(request, context) {
      return unary("ReportAppliedConfig", async () =>
        (options.reportApplied ?? (() => notServed("ReportAppliedConfig")))(request, context),
      );
    },
    getFleetStatus(request) {
      return unary("GetFleetStatus", async () =>
        (options.fleetStatus ?? (() => notServed("GetFleetStatus")))(request),
      );
    },
  };
}
