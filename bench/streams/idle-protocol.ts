/**
 * The messages between `run-idle-streams.ts` and its two child processes
 * (`heap-registrar.ts`, `idle-client.ts`), over the fork IPC channel.
 */

/** The registrar's memory after forced collections (`process.memoryUsage()`, bytes). */
export interface HeapReading {
  readonly heapUsed: number;
  readonly external: number;
  readonly arrayBuffers: number;
  readonly rss: number;
  /** The registrar's open WatchConfig streams (`aether_config_watch_streams`). */
  readonly openStreams: number;
  /** How many full collections it took until heapUsed stood still. */
  readonly collections: number;
}

/** From the heap registrar: listening (`url`) with every projection in its cache. */
export interface HeapRegistrarReady {
  readonly type: "ready";
  readonly url: string;
}

/** From the heap registrar: the answer to a `measure` command. */
export interface HeapRegistrarReading {
  readonly type: "reading";
  readonly reading: HeapReading;
}

/** To the heap registrar: collect until stable and report; or stop and exit. */
export type HeapRegistrarCommand = { readonly type: "measure" } | { readonly type: "stop" };

/** The two paths a WatchConfig stream can take through the registrar. */
export type StreamPath = "lane" | "connect-es";

/** To the idle client. */
export type IdleClientCommand =
  /** Open one HTTP/2 connection per entry of `deps` (no stream yet). */
  | { readonly type: "connect"; readonly url: string; readonly count: number }
  /**
   * Open one WatchConfig stream on each connection, the i-th watching
   * `deps[i]`, by `path`, and answer once every stream received SYNCED.
   */
  | { readonly type: "watch"; readonly path: StreamPath; readonly deps: readonly string[][] }
  /** Close every stream and connection. */
  | { readonly type: "close" };

/** From the idle client: the command's outcome. */
export interface IdleClientDone {
  readonly type: "done";
  /** How long the command took. */
  readonly ms: number;
  /** Connections or streams that failed (closed, refused, ended early). */
  readonly failures: number;
  /** Response bytes received since the last command. */
  readonly bytes: number;
  /** The first failure's description, if any. */
  readonly firstFailure?: string;
}
