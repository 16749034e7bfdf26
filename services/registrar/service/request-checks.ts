/**
 * The checks of ConfigService requests: every field a ListConfig,
 * ListAllConfig or WatchConfig request carries is checked here, in the order
 * the handlers always checked them (so a request with several faults is
 * refused for the same one), and turned into the query the listing and watch
 * modules serve. A fault is an INVALID_ARGUMENT ConnectError whose message
 * says what is wrong. Synchronous and free of I/O.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import {
  ConfigView,
  type ListAllConfigRequest,
  type ListConfigRequest,
  type WatchConfigRequest,
} from "../../../gen/aether/registry/v1/config_service_pb.js";
import { checkClusterName, checkRecordName } from "../../common/service-name.js";
import type { CacheView } from "../cache/config-cache.js";
import {
  type PageCursor,
  PageTokenError,
  type PageTokens,
  queryFingerprint,
} from "./page-token.js";

/** The page size used when a request leaves it 0. */
export const DEFAULT_PAGE_SIZE = 100;
/** The largest page size a request may ask for. */
export const MAX_PAGE_SIZE = 1000;
/** The most services one request may name. */
export const MAX_REQUEST_SERVICES = 10_000;

/** The longest error message sent; longer ones (echoing huge input) are cut, since gRPC carries them in a header. */
const MAX_ERROR_MESSAGE = 512;

/**
 * Returns an INVALID_ARGUMENT error with `message`, cut to 512 characters
 * (and marked with `…`) when it is longer.
 */
export function invalid(message: string): ConnectError {
  const text =
    message.length > MAX_ERROR_MESSAGE ? `${message.slice(0, MAX_ERROR_MESSAGE)}…` : message;
  return new ConnectError(text, Code.InvalidArgument);
}

/**
 * Checks a request's `services`: at most {@link MAX_REQUEST_SERVICES}, each a
 * valid `namespace/name` or the mesh record's `@mesh`. Returns them as a set, or undefined when the list
 * is empty (every service). Throws {@link invalid} otherwise.
 */
export function checkServices(services: readonly string[]): ReadonlySet<string> | undefined {
  if (services.length > MAX_REQUEST_SERVICES) {
    throw invalid(
      `services names ${services.length} services; at most ${MAX_REQUEST_SERVICES} are allowed`,
    );
  }
  for (const service of services) {
    const problem = checkRecordName(service);
    if (problem !== undefined) throw invalid(problem);
  }
  return services.length === 0 ? undefined : new Set(services);
}

/**
 * Checks a request's `page_size`: 0 means {@link DEFAULT_PAGE_SIZE}; a
 * negative size or one above {@link MAX_PAGE_SIZE} throws {@link invalid}.
 */
export function checkPageSize(pageSize: number): number {
  if (pageSize < 0) throw invalid(`page_size ${pageSize} is negative`);
  if (pageSize > MAX_PAGE_SIZE) {
    throw invalid(`page_size ${pageSize} is larger than the maximum of ${MAX_PAGE_SIZE}`);
  }
  return pageSize === 0 ? DEFAULT_PAGE_SIZE : pageSize;
}

/**
 * Maps a request's `view` to the cache's: UNSPECIFIED and EFFECTIVE are
 * `effective`, ALL_ORIGINS is `all`; any other number throws {@link invalid}.
 */
export function checkView(view: ConfigView): CacheView {
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

/**
 * Reads a request's `page_token` for the query `fingerprint` with `tokens`:
 * undefined for "" (the first page), otherwise the cursor it carries. A token
 * that is malformed, forged, expired or belongs to another query throws {@link invalid} with the
 * message of its {@link PageTokenError}.
 */
export function readCursor(
  tokens: PageTokens,
  fingerprint: string,
  token: string,
): PageCursor | undefined {
  if (token === "") return undefined;
  try {
    return tokens.decode(fingerprint, token);
  } catch (error) {
    if (error instanceof PageTokenError) throw invalid(error.message);
    throw error;
  }
}

/** What a page of a listing is asked for, once its request is checked. */
export interface ListingQuery {
  /** The query's fingerprint (see `queryFingerprint`), which its page tokens carry. */
  readonly fingerprint: string;
  /** Only these services; undefined means every service. */
  readonly services: ReadonlySet<string> | undefined;
  /** Where the page starts (from the page token); undefined for the first page. */
  readonly cursor: PageCursor | undefined;
  /** How many entries the page holds at most. */
  readonly pageSize: number;
}

/** A checked ListConfig request. */
export interface ListConfigQuery extends ListingQuery {
  /** The origin whose projections are listed. */
  readonly origin: string;
}

/** A checked ListAllConfig request. */
export interface ListAllConfigQuery extends ListingQuery {
  /** The view listed. */
  readonly view: CacheView;
}

/** A checked WatchConfig request. */
export interface WatchQuery {
  /** Only these services; undefined means every service. */
  readonly services: ReadonlySet<string> | undefined;
  /** The view followed. */
  readonly view: CacheView;
  /** Resume after this revision; 0 asks for a snapshot. */
  readonly resumeRevision: number;
}

/**
 * Checks a ListConfig request: its origin (`ownOrigin` when the request
 * leaves it empty), services, page size and page token, in that order.
 * Throws {@link invalid} at the first fault.
 */
export function checkListConfigRequest(
  request: Pick<ListConfigRequest, "originCluster" | "services" | "pageSize" | "pageToken">,
  ownOrigin: string,
  tokens: PageTokens,
): ListConfigQuery {
  const origin = request.originCluster === "" ? ownOrigin : request.originCluster;
  const originProblem = checkClusterName(origin);
  if (originProblem !== undefined) throw invalid(`origin_cluster: ${originProblem}`);
  const services = checkServices(request.services);
  const pageSize = checkPageSize(request.pageSize);
  const fingerprint = queryFingerprint(["ListConfig", origin, request.services]);
  const cursor = readCursor(tokens, fingerprint, request.pageToken);
  return { origin, services, pageSize, fingerprint, cursor };
}

/**
 * Checks a ListAllConfig request: its services, view, page size and page
 * token, in that order. Throws {@link invalid} at the first fault.
 */
export function checkListAllConfigRequest(
  request: Pick<ListAllConfigRequest, "services" | "view" | "pageSize" | "pageToken">,
  tokens: PageTokens,
): ListAllConfigQuery {
  const services = checkServices(request.services);
  const view = checkView(request.view);
  const pageSize = checkPageSize(request.pageSize);
  const fingerprint = queryFingerprint(["ListAllConfig", view, request.services]);
  const cursor = readCursor(tokens, fingerprint, request.pageToken);
  return { view, services, pageSize, fingerprint, cursor };
}

/**
 * Checks a WatchConfig request: its services, view and resume revision, in
 * that order. Throws {@link invalid} at the first fault. A resume revision
 * beyond `Number.MAX_SAFE_INTEGER` can never have been served, so it asks
 * for a snapshot (0), as one from the future does.
 */
export function checkWatchConfigRequest(
  request: Pick<WatchConfigRequest, "services" | "view" | "resumeRevision">,
): WatchQuery {
  const services = checkServices(request.services);
  const view = checkView(request.view);
  const { resumeRevision } = request;
  if (resumeRevision < 0n) throw invalid(`resume_revision ${resumeRevision} is negative`);
  const resume = resumeRevision > BigInt(Number.MAX_SAFE_INTEGER) ? 0 : Number(resumeRevision);
  return { services, view, resumeRevision: resume };
}
