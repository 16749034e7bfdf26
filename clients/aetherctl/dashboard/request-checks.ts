/**
 * The decisions `aetherctl dashboard` makes about each request before it
 * serves anything, pure so they are table-tested: whether the Host header
 * names this server (a DNS-rebinding page's Host names the attacker's
 * domain), whether an API call comes from the dashboard's own page (the
 * Origin and Sec-Fetch-Site headers of a cross-site form or fetch), whether a
 * path is a ConfigService call, and which asset file a path names (never one
 * outside the assets directory).
 */

/** The path prefix of the ConfigService calls the dashboard forwards. */
export const API_PATH_PREFIX = "/aether.registry.v1.ConfigService/";

/** The names every loopback listener answers to, besides the listen host itself. */
const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]"];

/** Whether `host` (a --listen host, IPv6 without brackets) is a loopback address or `localhost`. */
export function isLoopbackHost(host: string): boolean {
  const name = host.toLowerCase();
  return name === "localhost" || name === "::1" || /^127(\.\d{1,3}){3}$/.test(name);
}

/** `host` as it appears in a URL or Host header: an IPv6 address in brackets. */
export function hostForUrl(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

/**
 * The Host header values (lower case) a dashboard listening on `listenHost`
 * and `port` accepts: the listen host, `localhost`, `127.0.0.1` and `[::1]`,
 * and `extraNames` (the shell passes the machine's addresses and host name
 * for a wildcard listen host), each with `:port`, and also bare when the
 * port is 80 (a browser leaves the default port out).
 */
export function allowedHosts(
  listenHost: string,
  port: number,
  extraNames: readonly string[] = [],
): ReadonlySet<string> {
  const names = [hostForUrl(listenHost), ...LOOPBACK_NAMES, ...extraNames.map(hostForUrl)];
  const hosts = new Set<string>();
  for (const name of names) {
    hosts.add(`${name.toLowerCase()}:${port}`);
    if (port === 80) hosts.add(name.toLowerCase());
  }
  return hosts;
}

/** A refusal: the HTTP status and the one-line reason sent as text/plain. */
export interface Refusal {
  readonly status: number;
  readonly reason: string;
}

/**
 * Checks the Host header (undefined when absent) against `allowed`
 * ({@link allowedHosts}); a missing or foreign one is refused with 421
 * (Misdirected Request), so that a page whose DNS name was rebound to this
 * address cannot read or call anything.
 */
export function checkHost(
  host: string | undefined,
  allowed: ReadonlySet<string>,
): Refusal | undefined {
  if (host === undefined || host === "") {
    return { status: 421, reason: "a request without a Host header is refused" };
  }
  if (allowed.has(host.toLowerCase())) return undefined;
  return {
    status: 421,
    reason: `Host ${JSON.stringify(host)} is not this dashboard's address (refused: DNS rebinding protection)`,
  };
}

/**
 * Checks an API call's Origin and Sec-Fetch-Site headers (undefined when
 * absent): an Origin must be the dashboard's own, `http://` + the (already
 * checked) Host; a Sec-Fetch-Site must be `same-origin` or `none`. A call
 * with neither (a non-browser client) passes. Refused with 403 otherwise:
 * another site's page must not call the registrar with the operator's
 * identity.
 */
export function checkApiOrigin(headers: {
  readonly host: string;
  readonly origin: string | undefined;
  readonly fetchSite: string | undefined;
}): Refusal | undefined {
  const { host, origin, fetchSite } = headers;
  if (origin !== undefined && origin.toLowerCase() !== `http://${host.toLowerCase()}`) {
    return {
      status: 403,
      reason: `Origin ${JSON.stringify(origin)} is not this dashboard's (refused: cross-site call)`,
    };
  }
  if (fetchSite !== undefined && fetchSite !== "same-origin" && fetchSite !== "none") {
    return {
      status: 403,
      reason: `Sec-Fetch-Site ${JSON.stringify(fetchSite)}: only the dashboard's own page may call the API`,
    };
  }
  return undefined;
}

/** Whether the request target (path and query) is a ConfigService call. */
export function isApiPath(target: string): boolean {
  return target.startsWith(API_PATH_PREFIX);
}

/** Which asset a request target names: a file relative to the assets directory, or a refusal. */
export type AssetPath =
  | { readonly kind: "file"; readonly path: string }
  | { readonly kind: "refused"; readonly refusal: Refusal };

const NOT_FOUND: Refusal = { status: 404, reason: "not found" };

/**
 * The asset file a request target (`/assets/app.js?v=1`) names, relative to
 * the assets directory with `/` separators: `/` is `index.html`, the query
 * is ignored. Refused: a target that is not an absolute path (400), bad
 * percent-encoding (400), and with 404 (telling nothing more) a backslash or
 * NUL, an empty, `.` or `..` segment (so nothing outside the directory), a
 * dot file, or a directory (a trailing `/`: no listings).
 */
export function assetPathOf(target: string): AssetPath {
  const path = target.split("?", 1)[0] as string;
  if (!path.startsWith("/")) {
    return { kind: "refused", refusal: { status: 400, reason: "not an absolute path" } };
  }
  if (path === "/") return { kind: "file", path: "index.html" };
  let segments: string[];
  try {
    segments = path.slice(1).split("/").map(decodeURIComponent);
  } catch {
    return { kind: "refused", refusal: { status: 400, reason: "bad percent-encoding" } };
  }
  const bad = segments.some(
    (segment) => segment === "" || segment.startsWith(".") || /[\\/\0]/.test(segment),
  );
  if (bad) return { kind: "refused", refusal: NOT_FOUND };
  return { kind: "file", path: segments.join("/") };
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  mjs: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  json: "application/json",
  map: "application/json",
  txt: "text/plain; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  ico: "image/x-icon",
  woff: "font/woff",
  woff2: "font/woff2",
  wasm: "application/wasm",
};

/** The Content-Type of an asset by its extension; `application/octet-stream` when unknown. */
export function contentTypeOf(path: string): string {
  const extension = /\.([a-z0-9]+)$/i.exec(path)?.[1]?.toLowerCase() ?? "";
  return CONTENT_TYPES[extension] ?? "application/octet-stream";
}

/**
 * The Cache-Control of an asset: a Vite output file under `assets/` whose
 * name carries a content hash (`index-B3x9_kQz.js`) never changes, so it is
 * cached for a year; anything else (index.html first) is revalidated on
 * every use, so a rebuilt console shows at the next reload.
 */
export function cacheControlOf(path: string): string {
  return /^assets\/[^/]+-[A-Za-z0-9_-]{8,}\.[a-z0-9]+$/.test(path)
    ? "public, max-age=31536000, immutable"
    : "no-cache";
}
