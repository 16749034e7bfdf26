/**
 * The console's routes, in the URL's hash (the dashboard serves files, not
 * an app shell for every path): `#/fleet?state=behind&q=shop`,
 * `#/service/shop/checkout`, `#/explain?service=shop/checkout`, `#/live`.
 * Pure: parse and format, nothing else.
 */
import { MESH_RECORD } from "../../../services/common/service-name.js";

/** The views. */
export type ViewName = "fleet" | "service" | "explain" | "live";

/** A parsed route: the view, its path arguments and its query. */
export interface Route {
  readonly view: ViewName;
  /** The service (`namespace/name`) of `#/service/NS/NAME`; empty otherwise. */
  readonly service: string;
  /** The query parameters (filters, form fields). */
  readonly query: ReadonlyMap<string, string>;
}

const VIEWS: readonly ViewName[] = ["fleet", "service", "explain", "live"];

/** The service of `#/service/NS/NAME` (or `#/service/@mesh`, the mesh record); empty for another path. */
function serviceOf(parts: readonly string[]): string {
  if (parts.length >= 3) return `${parts[1]}/${parts[2]}`;
  return parts[1] === MESH_RECORD ? MESH_RECORD : "";
}

/** The route of `hash` (`location.hash`); the fleet for an empty or unknown one. */
export function parseRoute(hash: string): Route {
  const text = hash.replace(/^#\/?/, "");
  const [path = "", search = ""] = text.split("?", 2);
  const parts = path
    .split("/")
    .filter((part) => part !== "")
    .map(decodeURIComponent);
  const query = new Map(new URLSearchParams(search));
  const view = VIEWS.find((name) => name === parts[0]);
  if (view === undefined) return { view: "fleet", service: "", query };
  const service = view === "service" ? serviceOf(parts) : "";
  return { view, service, query };
}

/** The hash of a route (the inverse of {@link parseRoute}); empty query values are left out. */
export function formatRoute(route: {
  view: ViewName;
  service?: string;
  query?: Iterable<readonly [string, string]>;
}): string {
  const path =
    route.view === "service" && route.service !== undefined && route.service !== ""
      ? `service/${route.service.split("/").map(encodeURIComponent).join("/")}`
      : route.view;
  const search = new URLSearchParams();
  for (const [key, value] of route.query ?? []) if (value !== "") search.set(key, value);
  const text = search.toString();
  return `#/${path}${text === "" ? "" : `?${text}`}`;
}
