/**
 * The handlers that take requests of one path before connect-es does (see
 * `HttpServerRouteContext.serveDirect` in `create-http-server.ts`): a
 * handler serves a request and returns true, or returns false and leaves
 * it, untouched, to connect-es.
 */
import type { PortRequest, PortResponse } from "./server-port.js";

/** A handler of one path; it answers every request it takes and never throws. */
export type DirectHandler = (req: PortRequest, res: PortResponse) => boolean;

/** The direct handlers of a server, by path. */
export interface DirectRoutes {
  /** Adds the handler of `path`; throws when the path has one already. */
  add(path: string, handler: DirectHandler): void;
  /** Offers a request to the handler of its path: true when the handler took it. */
  serve(req: PortRequest, res: PortResponse): boolean;
}

/** Creates an empty set of direct handlers. */
export function createDirectRoutes(): DirectRoutes {
  const handlers = new Map<string, DirectHandler>();
  return {
    add(path, handler) {
      if (handlers.has(path)) throw new Error(`a direct handler serves ${path} already`);
      handlers.set(path, handler);
    },
    serve(req, res) {
      if (handlers.size === 0) return false;
      const path = (req.url ?? "").split("?")[0] ?? "";
      return handlers.get(path)?.(req, res) === true;
    },
  };
}
