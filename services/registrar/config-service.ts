/**
 * The ConfigService implementation: list reads go to the store at a pinned
 * revision (so they fail fast with UNAVAILABLE when it is down, and pages are
 * one consistent snapshot); watch streams are served from the config cache.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type ConfigService,
  ConfigView,
  type ExportStatus,
  type GetConfigStatusResponse,
  GetConfigStatusResponseSchema,
  type ListAllConfigResponse,
  ListAllConfigResponseSchema,
  type ListConfigResponse,
  ListConfigResponseSchema,
  type WatchConfigResponse,
  WatchConfigResponseSchema,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import type { ImportPolicy } from "../common/import-policy.js";
import { parseVersion } from "../common/projection-version.js";
import { checkClusterName, checkServiceName } from "../common/service-name.js";
import { createAsyncQueue, QueueOverflowError } from "./async-queue.js";
import type { CacheEvent, CacheView, ConfigCache } from "./config-cache.js";
import { createSilentLogger, type Logger } from "./logger.js";
import {
  decodePageToken,
  encodePageToken,
  type PageCursor,
  PageTokenError,
  queryFingerprint,
} from "./page-token.js";
import type { RegistrarMetrics } from "./registrar-metrics.js";
import {
  type ConfigStore,
  StoreCompactedError,
  type StoredProjection,
  StoreUnavailableError,
} from "./store/config-store.js";

/** The page size used when a request leaves it 0. */
export const DEFAULT_PAGE_SIZE = 100;
/** The largest page size a request may ask for. */
export const MAX_PAGE_SIZE = 1000;
/** The most services one request may name. */
export const MAX_REQUEST_SERVICES = 10_000;

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
  /** The store kind reported by GetConfigStatus; default the store's own. */
  readonly storeKind?: string;
  /** The export controller's state for GetConfigStatus; undefined means export is off. */
  readonly exportStatus?: () => ExportStatus;
}

/** The longest error message sent; longer ones (echoing huge input) are cut, since gRPC carries them in a header. */
const MAX_ERROR_MESSAGE = 512;

function invalid(message: string): ConnectError {
  const text =
    message.length > MAX_ERROR_MESSAGE ? `${message.slice(0, MAX_ERROR_MESSAGE)}…` : message;
  return new ConnectError(text, Code.InvalidArgument);
}

function checkServices(services: readonly string[]): ReadonlySet<string> | undefined {
  if (services.length > MAX_REQUEST_SERVICES) {
    throw invalid(
      `services names ${services.length} services; at most ${MAX_REQUEST_SERVICES} are allowed`,
    );
  }
  for (const service of services) {
    const problem = checkServiceName(service);
    if (problem !== undefined) throw invalid(problem);
  }
  return services.length === 0 ? undefined : new Set(services);
}

function checkPageSize(pageSize: number): number {
  if (pageSize < 0) throw invalid(`page_size ${pageSize} is negative`);
  if (pageSize > MAX_PAGE_SIZE) {
    throw invalid(`page_size ${pageSize} is larger than the maximum of ${MAX_PAGE_SIZE}`);
  }
  return pageSize === 0 ? DEFAULT_PAGE_SIZE : pageSize;
}

function checkView(view: ConfigView): CacheView {
  switch (view) {
    case ConfigView.UNSPECIFIED:
    case ConfigView.EFFECTIVE:
      return "effective";
    case ConfigView.ALL_ORIGINS:
      return "all";
    default:
      throw invalid(`view ${view} is not a ConfigView value`);
  }
}

function readCursor(fingerprint: string, token: string): PageCursor | undefined {
  if (token === "") return undefined;
  try {
    return decodePageToken(fingerprint, token);
  } catch (error) {
    if (error instanceof PageTokenError) throw invalid(error.message);
    throw error;
  }
}

/** Maps store and validation failures to the ConnectError codes the contract promises. */
function toConnectError(error: unknown, logger: Logger): ConnectError {
  if (error instanceof ConnectError) return error;
  if (error instanceof StoreUnavailableError) {
    return new ConnectError(error.message, Code.Unavailable);
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
  logger.error({ err: error }, "unexpected error serving ConfigService");
  return new ConnectError("internal error", Code.Internal);
}

function nextToken(
  fingerprint: string,
  revision: number,
  last: StoredProjection | undefined,
  more: boolean,
  byServiceOnly = false,
): string {
  if (!more || last === undefined) return "";
  return encodePageToken(fingerprint, {
    revision,
    origin: byServiceOnly ? "" : last.origin,
    service: last.service,
  });
}

/**
 * Resolves when the cache first syncs, when it gives up starting (the store is
 * unavailable), or when a signal aborts, whichever comes first.
 */
async function waitUntilSynced(
  cache: ConfigCache,
  signals: readonly (AbortSignal | undefined)[],
): Promise<void> {
  const live = signals.filter((signal): signal is AbortSignal => signal !== undefined);
  if (live.some((signal) => signal.aborted)) return;
  const aborted = AbortSignal.any(live);
  await Promise.race([
    cache.whenSettled(),
    new Promise<void>((resolve) =>
      aborted.addEventListener("abort", () => resolve(), { once: true }),
    ),
  ]);
}

/** Creates the ConfigService handlers for `router.service(ConfigService, …)`. */
export function createConfigService(
  options: ConfigServiceOptions,
): ServiceImpl<typeof ConfigService> {
  const { store, cache, policy, metrics } = options;
  const logger = options.logger ?? createSilentLogger();
  const keepaliveMs = options.keepaliveMs ?? 15_000;
  const maxBacklog = options.maxStreamBacklog ?? 50_000;

  async function listConfig(
    origin: string,
    services: readonly string[],
    pageSizeRequest: number,
    pageToken: string,
  ): Promise<ListConfigResponse> {
    const originProblem = checkClusterName(origin);
    if (originProblem !== undefined) throw invalid(`origin_cluster: ${originProblem}`);
    const serviceSet = checkServices(services);
    const pageSize = checkPageSize(pageSizeRequest);
    const fingerprint = queryFingerprint(["ListConfig", origin, services]);
    const cursor = readCursor(fingerprint, pageToken);
    const result = await store.list({
      origin,
      services: serviceSet,
      revision: cursor?.revision,
      after: cursor === undefined ? undefined : { origin: cursor.origin, service: cursor.service },
      limit: pageSize,
    });
    return create(ListConfigResponseSchema, {
      projections: result.entries.map((entry) => entry.projection),
      nextPageToken: nextToken(fingerprint, result.revision, result.entries.at(-1), result.more),
      revision: BigInt(result.revision),
    });
  }

  async function listAllConfig(
    services: readonly string[],
    viewRequest: ConfigView,
    pageSizeRequest: number,
    pageToken: string,
  ): Promise<ListAllConfigResponse> {
    const serviceSet = checkServices(services);
    const view = checkView(viewRequest);
    const pageSize = checkPageSize(pageSizeRequest);
    const fingerprint = queryFingerprint(["ListAllConfig", view, services]);
    const cursor = readCursor(fingerprint, pageToken);
    if (view === "all") {
      const result = await store.list({
        services: serviceSet,
        revision: cursor?.revision,
        after:
          cursor === undefined ? undefined : { origin: cursor.origin, service: cursor.service },
        limit: pageSize,
      });
      return create(ListAllConfigResponseSchema, {
        projections: result.entries.map((entry) => entry.projection),
        nextPageToken: nextToken(fingerprint, result.revision, result.entries.at(-1), result.more),
        revision: BigInt(result.revision),
      });
    }
    // The effective view needs every origin's candidates for a service, so it
    // reads the whole (filtered) snapshot at the pinned revision and pages by service.
    const result = await store.list({ services: serviceSet, revision: cursor?.revision });
    const winners = [...policy.resolve(result.entries).winners.values()];
    const start =
      cursor === undefined ? 0 : winners.findIndex((entry) => entry.service > cursor.service);
    const page = start < 0 ? [] : winners.slice(start, start + pageSize);
    const more = start >= 0 && start + pageSize < winners.length;
    return create(ListAllConfigResponseSchema, {
      projections: page.map((entry) => entry.projection),
      nextPageToken: nextToken(fingerprint, result.revision, page.at(-1), more, true),
      revision: BigInt(result.revision),
    });
  }

  function toWatchResponse(event: CacheEvent): WatchConfigResponse {
    return create(WatchConfigResponseSchema, {
      type: event.type === "upsert" ? WatchEventType.UPSERT : WatchEventType.DELETE,
      projection: event.entry?.projection,
      service: event.service,
      originCluster: event.origin,
      revision: BigInt(event.revision),
    });
  }

  async function* watchConfig(
    services: readonly string[],
    resumeRevision: bigint,
    viewRequest: ConfigView,
    signal: AbortSignal,
  ): AsyncGenerator<WatchConfigResponse> {
    const serviceSet = checkServices(services);
    const view = checkView(viewRequest);
    if (resumeRevision < 0n) throw invalid(`resume_revision ${resumeRevision} is negative`);
    const resume = resumeRevision > BigInt(Number.MAX_SAFE_INTEGER) ? 0 : Number(resumeRevision);

    if (cache.state === "starting") {
      // Right after start the cache is still listing: wait for it rather than
      // failing the stream (a store that is down fails it below instead).
      await waitUntilSynced(cache, [signal, options.drainSignal]);
    }
    const queue = createAsyncQueue<WatchConfigResponse>(maxBacklog);
    const subscription = cache.subscribe({
      services: serviceSet,
      view,
      resumeRevision: resume,
      onEvents: (events) => queue.push(...events.map(toWatchResponse)),
      onClose: (error) => queue.fail(new ConnectError(error.message, Code.Unavailable)),
    });
    const end = () => queue.close();
    signal.addEventListener("abort", end);
    options.drainSignal?.addEventListener("abort", end);
    if (options.drainSignal?.aborted) end();
    const keepalive = setInterval(() => {
      if (queue.size === 0) {
        queue.push(
          create(WatchConfigResponseSchema, {
            type: WatchEventType.KEEPALIVE,
            revision: BigInt(cache.revision),
          }),
        );
      }
    }, keepaliveMs);
    metrics?.addWatchStreams(1);
    try {
      const initial = subscription.initial;
      if (initial.kind === "snapshot") {
        for (const entry of initial.entries) {
          yield create(WatchConfigResponseSchema, {
            type: WatchEventType.SNAPSHOT,
            projection: entry.projection,
            service: entry.service,
            originCluster: entry.origin,
            revision: BigInt(initial.revision),
          });
        }
      } else {
        for (const event of initial.events) yield toWatchResponse(event);
      }
      yield create(WatchConfigResponseSchema, {
        type: WatchEventType.SYNCED,
        revision: BigInt(initial.revision),
        resumed: initial.kind === "replay",
      });
      for await (const response of queue) yield response;
    } catch (error) {
      if (error instanceof QueueOverflowError) {
        throw new ConnectError(
          `the stream fell more than ${maxBacklog} events behind; resume from the last revision applied`,
          Code.ResourceExhausted,
        );
      }
      throw error;
    } finally {
      clearInterval(keepalive);
      subscription.unsubscribe();
      signal.removeEventListener("abort", end);
      options.drainSignal?.removeEventListener("abort", end);
      metrics?.addWatchStreams(-1);
    }
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

  function getConfigStatus(): GetConfigStatusResponse {
    if (cache.state !== "synced") {
      throw new ConnectError(
        cache.lastError === undefined
          ? "the registrar has not synced with the store yet"
          : `store unavailable: ${cache.lastError.message}`,
        Code.Unavailable,
      );
    }
    const entries = cache.entries();
    const resolution = policy.resolve(entries);
    const origins = new Map<
      string,
      { count: number; newest: string; oldest: string; newestNs: bigint; oldestNs: bigint }
    >();
    for (const entry of entries) {
      const ns = parseVersion(entry.projection.version);
      let summary = origins.get(entry.origin);
      if (summary === undefined) {
        summary = { count: 0, newest: "", oldest: "", newestNs: -1n, oldestNs: -1n };
        origins.set(entry.origin, summary);
      }
      summary.count++;
      if (ns !== undefined) {
        if (summary.newestNs < 0n || ns > summary.newestNs) {
          summary.newestNs = ns;
          summary.newest = entry.projection.version;
        }
        if (summary.oldestNs < 0n || ns < summary.oldestNs) {
          summary.oldestNs = ns;
          summary.oldest = entry.projection.version;
        }
      }
    }
    return create(GetConfigStatusResponseSchema, {
      cluster: options.origin,
      controlCluster: policy.controlCluster ?? "",
      store: options.storeKind ?? store.kind,
      synced: true,
      revision: BigInt(cache.revision),
      origins: [...origins.keys()].sort().map((origin) => {
        const summary = origins.get(origin) as { count: number; newest: string; oldest: string };
        return {
          origin,
          projections: summary.count,
          newestVersion: summary.newest,
          oldestVersion: summary.oldest,
          trusted: policy.controlCluster === undefined || policy.controlCluster === origin,
        };
      }),
      rejections: resolution.rejections.map((r) => ({
        service: r.candidate.service,
        originCluster: r.candidate.origin,
        reason: r.reason,
        message: r.message,
      })),
      conflicts: resolution.conflicts.map((c) => ({
        service: c.service,
        winnerOrigin: c.winner.origin,
        winnerVersion: c.winner.projection.version,
        loserOrigins: c.losers.map((l) => l.origin),
      })),
      export: options.exportStatus?.() ?? {
        enabled: false,
        disabledReason: "no --export-source configured",
      },
    });
  }

  return {
    async getConfigStatus() {
      return unary("GetConfigStatus", async () => getConfigStatus());
    },
    listConfig(request) {
      return unary("ListConfig", () =>
        listConfig(
          request.originCluster === "" ? options.origin : request.originCluster,
          request.services,
          request.pageSize,
          request.pageToken,
        ),
      );
    },
    listAllConfig(request) {
      return unary("ListAllConfig", () =>
        listAllConfig(request.services, request.view, request.pageSize, request.pageToken),
      );
    },
    async *watchConfig(request, context) {
      let code = "ok";
      try {
        yield* watchConfig(request.services, request.resumeRevision, request.view, context.signal);
      } catch (error) {
        const connectError = toConnectError(error, logger);
        code = Code[connectError.code] ?? "unknown";
        throw connectError;
      } finally {
        metrics?.countRpc("WatchConfig", code);
      }
    },
  };
}
