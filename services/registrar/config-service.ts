/**
 * The ConfigService implementation: list reads go to the store at a pinned
 * revision (so they fail fast with UNAVAILABLE when it is down, and pages are
 * one consistent snapshot); watch streams are served from the config cache.
 *
 * Projections travel as the store holds them: a response encoded with the
 * protobuf binary codec carries their stored bytes (see
 * `encoded-messages.ts`), and only a JSON response decodes them. The
 * EFFECTIVE view of ListAllConfig orders by service, which is not the store's
 * key order, so its first page reads and resolves the whole (filtered)
 * snapshot; the result is kept for a while by query and revision, so that the
 * later pages of the listing are slices of it, not whole reads again.
 */
import { setMaxListeners } from "node:events";
import { create, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
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
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import type { ImportPolicy } from "../common/import-policy.js";
import { checkClusterName, checkServiceName } from "../common/service-name.js";
import { createAsyncQueue, QueueOverflowError } from "../runtime/async-queue.js";
import { createSilentLogger, type Logger } from "../runtime/logger.js";
import {
  type CachedProjection,
  type CacheEvent,
  type CacheView,
  type ConfigCache,
  decodeCachedProjection,
} from "./config-cache.js";
import { usesBinaryCodec, withEncodedMessages } from "./encoded-messages.js";
import { createKeptListings, type ListingWindow } from "./kept-listings.js";
import {
  decodePageToken,
  encodePageToken,
  type PageCursor,
  PageTokenError,
  queryFingerprint,
} from "./page-token.js";
import type { RegistrarMetrics } from "./registrar-metrics.js";
import { summarizeStatus } from "./status-summary.js";
import {
  type ConfigStore,
  StoreCompactedError,
  type StoredProjection,
  StoreUnavailableError,
} from "./store/config-store.js";
import { compareKeys } from "./store/decode-entry.js";
import { projectionKey } from "./store/store-key.js";

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

/** How many listing windows (see `kept-listings.ts`) are kept for later pages. */
const KEPT_LISTINGS = 8;
/** How long a listing window is kept after a page was last served from it. */
const KEPT_LISTING_TTL_MS = 30_000;
/** How many entries a listing in key order reads ahead for its later pages (five full pages). */
const READ_AHEAD = 5 * MAX_PAGE_SIZE;

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
 * Returns a list response carrying `entries` as its projections: their stored
 * bytes when the response is binary, decoded messages otherwise.
 */
function withProjections<T extends ListAllConfigResponse | ListConfigResponse>(
  response: T,
  entries: readonly StoredProjection[],
  binary: boolean,
): T {
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

/**
 * Returns a watch response carrying `entry` as its projection: its stored
 * bytes when the stream is binary, the decoded message otherwise.
 */
function withProjection(
  response: WatchConfigResponse,
  entry: CachedProjection | undefined,
  binary: boolean,
): WatchConfigResponse {
  if (entry === undefined) return response;
  if (!binary) {
    response.projection = decodeCachedProjection(entry);
    return response;
  }
  return withEncodedMessages(response, WatchConfigResponseSchema.field.projection, [entry.value]);
}

/**
 * The index of the first of `entries` (in store key order) whose key sorts
 * after the key of `after`.
 */
function firstAfterKey(
  prefix: string,
  entries: readonly StoredProjection[],
  after: { readonly origin: string; readonly service: string },
): number {
  const afterKey = projectionKey(prefix, after.origin, after.service);
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    const entry = entries[mid] as StoredProjection;
    if (compareKeys(projectionKey(prefix, entry.origin, entry.service), afterKey) <= 0) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return low;
}

/** Reports whether a key-ordered window starts at or before the position after `after`. */
function startsAtOrBefore(
  prefix: string,
  window: ListingWindow,
  after: { readonly origin: string; readonly service: string },
): boolean {
  if (window.after === undefined) return true;
  return (
    compareKeys(
      projectionKey(prefix, window.after.origin, window.after.service),
      projectionKey(prefix, after.origin, after.service),
    ) <= 0
  );
}

/** The index of the first entry (sorted by service) whose service sorts after `service`. */
function firstAfter(entries: readonly StoredProjection[], service: string): number {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((entries[mid] as StoredProjection).service <= service) low = mid + 1;
    else high = mid;
  }
  return low;
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

/** A cached projection as a store entry; its message is decoded only if read. */
function toStoredProjection(entry: CachedProjection): StoredProjection {
  let decoded: ServiceConfigProjection | undefined;
  return {
    origin: entry.origin,
    service: entry.service,
    value: entry.value,
    version: entry.projection.version,
    modRevision: entry.modRevision,
    get projection() {
      decoded ??= decodeCachedProjection(entry);
      return decoded;
    },
  };
}

/** Creates the ConfigService handlers for `router.service(ConfigService, …)`. */
export function createConfigService(
  options: ConfigServiceOptions,
): ServiceImpl<typeof ConfigService> {
  const { store, cache, policy, metrics } = options;
  const logger = options.logger ?? createSilentLogger();
  const keepaliveMs = options.keepaliveMs ?? 15_000;
  const maxBacklog = options.maxStreamBacklog ?? 50_000;
  // Every open watch stream listens for the drain: thousands of listeners are expected.
  if (options.drainSignal !== undefined) setMaxListeners(0, options.drainSignal);
  const kept = createKeptListings({ capacity: KEPT_LISTINGS, ttlMs: KEPT_LISTING_TTL_MS });

  /**
   * The projections of `services` (of one origin, when given) in `view`, from
   * the config cache, or undefined when it is not synced. A synced cache
   * holds the store's state at `cache.revision`, so this is what a store read
   * at that revision returns, without reading every origin's projections off
   * the store to keep a few: a filtered list is what every polling agent
   * sends, so it must cost what the answer costs, not what the store holds.
   * Ordered by store key (`all`) or by service (`effective`).
   */
  function cachedListing(
    services: ReadonlySet<string>,
    view: CacheView,
    origin?: string,
  ): { revision: number; entries: StoredProjection[] } | undefined {
    if (cache.state !== "synced") return undefined;
    const snapshot = cache.snapshot(services, view);
    const entries = snapshot.entries
      .filter((entry) => origin === undefined || entry.origin === origin)
      .map(toStoredProjection);
    if (view === "all") {
      const key = (e: StoredProjection) => projectionKey(store.prefix, e.origin, e.service);
      entries.sort((a, b) => compareKeys(key(a), key(b)));
    }
    return { revision: snapshot.revision, entries };
  }

  /**
   * Returns one page of a listing in store key order (ListConfig, and
   * ListAllConfig's ALL_ORIGINS view): from the window an earlier page read
   * ahead at the cursor's revision when it covers the page, otherwise from
   * the store, reading ahead a window of {@link READ_AHEAD} entries for the
   * pages that follow.
   */
  async function keyOrderedPage(
    fingerprint: string,
    filter: { readonly origin?: string; readonly services?: ReadonlySet<string> },
    cursor: PageCursor | undefined,
    pageSize: number,
  ): Promise<{ entries: StoredProjection[]; more: boolean; revision: number }> {
    if (cursor === undefined && filter.services !== undefined) {
      const cached = cachedListing(filter.services, "all", filter.origin);
      if (cached !== undefined) {
        kept.set(`${fingerprint}@${cached.revision}`, {
          entries: cached.entries,
          more: false,
          after: undefined,
        });
        return {
          entries: cached.entries.slice(0, pageSize),
          more: pageSize < cached.entries.length,
          revision: cached.revision,
        };
      }
    }
    const after =
      cursor === undefined ? undefined : { origin: cursor.origin, service: cursor.service };
    if (cursor !== undefined && after !== undefined) {
      const window = kept.get(`${fingerprint}@${cursor.revision}`);
      if (window !== undefined && startsAtOrBefore(store.prefix, window, after)) {
        const start = firstAfterKey(store.prefix, window.entries, after);
        if (start + pageSize <= window.entries.length || !window.more) {
          return {
            entries: window.entries.slice(start, start + pageSize),
            more: start + pageSize < window.entries.length || window.more,
            revision: cursor.revision,
          };
        }
      }
    }
    const read = await store.list({
      ...filter,
      revision: cursor?.revision,
      after,
      limit: Math.max(pageSize, READ_AHEAD),
    });
    kept.set(`${fingerprint}@${read.revision}`, {
      entries: read.entries,
      more: read.more,
      after,
    });
    return {
      entries: read.entries.slice(0, pageSize),
      more: pageSize < read.entries.length || read.more,
      revision: read.revision,
    };
  }

  /**
   * Returns the EFFECTIVE view of the (filtered) store at `revision` (the
   * latest when undefined): one winner per service, sorted by service. Served
   * from a listing resolved earlier for the same query and revision when
   * there is one, otherwise read and resolved now (and kept).
   */
  async function effectiveListing(
    fingerprint: string,
    services: ReadonlySet<string> | undefined,
    revision: number | undefined,
  ): Promise<{ revision: number; winners: readonly StoredProjection[] }> {
    if (revision !== undefined) {
      const window = kept.get(`${fingerprint}@${revision}`);
      if (window !== undefined) return { revision, winners: window.entries };
    }
    const cached =
      revision === undefined && services !== undefined
        ? cachedListing(services, "effective")
        : undefined;
    if (cached !== undefined) {
      kept.set(`${fingerprint}@${cached.revision}`, {
        entries: cached.entries,
        more: false,
        after: undefined,
      });
      return { revision: cached.revision, winners: cached.entries };
    }
    const result = await store.list({ services, revision });
    // The policy reads only service and version: offer those, so nothing is decoded.
    const candidates = result.entries.map((entry) => ({
      origin: entry.origin,
      service: entry.service,
      projection: { service: entry.service, version: entry.version },
      entry,
    }));
    const winners = [...policy.resolve(candidates).winners.values()].map((c) => c.entry);
    kept.set(`${fingerprint}@${result.revision}`, {
      entries: winners,
      more: false,
      after: undefined,
    });
    return { revision: result.revision, winners };
  }

  async function listConfig(
    origin: string,
    services: readonly string[],
    pageSizeRequest: number,
    pageToken: string,
    binary: boolean,
  ): Promise<ListConfigResponse> {
    const originProblem = checkClusterName(origin);
    if (originProblem !== undefined) throw invalid(`origin_cluster: ${originProblem}`);
    const serviceSet = checkServices(services);
    const pageSize = checkPageSize(pageSizeRequest);
    const fingerprint = queryFingerprint(["ListConfig", origin, services]);
    const cursor = readCursor(fingerprint, pageToken);
    const page = await keyOrderedPage(
      fingerprint,
      { origin, services: serviceSet },
      cursor,
      pageSize,
    );
    const response = create(ListConfigResponseSchema, {
      nextPageToken: nextToken(fingerprint, page.revision, page.entries.at(-1), page.more),
      revision: BigInt(page.revision),
    });
    return withProjections(response, page.entries, binary);
  }

  async function listAllConfig(
    services: readonly string[],
    viewRequest: ConfigView,
    pageSizeRequest: number,
    pageToken: string,
    binary: boolean,
  ): Promise<ListAllConfigResponse> {
    const serviceSet = checkServices(services);
    const view = checkView(viewRequest);
    const pageSize = checkPageSize(pageSizeRequest);
    const fingerprint = queryFingerprint(["ListAllConfig", view, services]);
    const cursor = readCursor(fingerprint, pageToken);
    if (view === "all") {
      const page = await keyOrderedPage(fingerprint, { services: serviceSet }, cursor, pageSize);
      const response = create(ListAllConfigResponseSchema, {
        nextPageToken: nextToken(fingerprint, page.revision, page.entries.at(-1), page.more),
        revision: BigInt(page.revision),
      });
      return withProjections(response, page.entries, binary);
    }
    // The effective view needs every origin's candidates for a service and is
    // ordered by service, not by key: page through the resolved snapshot.
    const { revision, winners } = await effectiveListing(fingerprint, serviceSet, cursor?.revision);
    const start = cursor === undefined ? 0 : firstAfter(winners, cursor.service);
    const page = winners.slice(start, start + pageSize);
    const more = start + pageSize < winners.length;
    const response = create(ListAllConfigResponseSchema, {
      nextPageToken: nextToken(fingerprint, revision, page.at(-1), more, true),
      revision: BigInt(revision),
    });
    return withProjections(response, page, binary);
  }

  function toWatchResponse(event: CacheEvent, binary: boolean): WatchConfigResponse {
    const response = create(WatchConfigResponseSchema, {
      type: event.type === "upsert" ? WatchEventType.UPSERT : WatchEventType.DELETE,
      service: event.service,
      originCluster: event.origin,
      revision: BigInt(event.revision),
    });
    return withProjection(response, event.entry, binary);
  }

  async function* watchConfig(
    services: readonly string[],
    resumeRevision: bigint,
    viewRequest: ConfigView,
    signal: AbortSignal,
    binary: boolean,
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
      onEvents: (events) => queue.push(...events.map((event) => toWatchResponse(event, binary))),
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
          const response = create(WatchConfigResponseSchema, {
            type: WatchEventType.SNAPSHOT,
            service: entry.service,
            originCluster: entry.origin,
            revision: BigInt(initial.revision),
          });
          yield withProjection(response, entry, binary);
        }
      } else {
        for (const event of initial.events) yield toWatchResponse(event, binary);
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
      synced: true,
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

  return {
    async getConfigStatus() {
      return unary("GetConfigStatus", async () => getConfigStatus());
    },
    listConfig(request, context) {
      return unary("ListConfig", () =>
        listConfig(
          request.originCluster === "" ? options.origin : request.originCluster,
          request.services,
          request.pageSize,
          request.pageToken,
          usesBinaryCodec(context),
        ),
      );
    },
    listAllConfig(request, context) {
      return unary("ListAllConfig", () =>
        listAllConfig(
          request.services,
          request.view,
          request.pageSize,
          request.pageToken,
          usesBinaryCodec(context),
        ),
      );
    },
    async *watchConfig(request, context: HandlerContext) {
      let code = "ok";
      try {
        yield* watchConfig(
          request.services,
          request.resumeRevision,
          request.view,
          context.signal,
          usesBinaryCodec(context),
        );
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
