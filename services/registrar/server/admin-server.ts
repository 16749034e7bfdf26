/**
 * The admin port (`--admin-listen`): plain HTTP/1.1 serving only `/healthz`,
 * `/readyz` and `/metrics`, so kubelet probes and Prometheus reach the
 * registrar without going through the API port: they need no client
 * certificate once that port speaks mTLS, and they keep answering while the
 * API port is full (its `--max-connections` reached by hostile or overloaded
 * clients).
 *
 * It is served by a worker thread (`admin-worker.ts`) with an event loop of
 * its own: a main thread saturated by thousands of clients turned its loop
 * about once a second under the hostile bench, and a probe answered on that
 * loop waited for two or three turns, over kubelet's one-second timeout.
 * This side beats in shared memory (`admin-liveness.ts`), sends the
 * readiness when it changes, and answers the worker's metrics requests.
 * A worker that dies is logged and not replaced: the probes then fail, and
 * kubelet restarts the process, as for any other failure of its liveness.
 */
import type { Worker } from "node:worker_threads";
import type { Logger } from "../../runtime/logger.js";
import { siblingModule, startModuleWorker } from "../../runtime/module-worker.js";
import { BEAT_INTERVAL_MS, DEFAULT_STALL_LIMIT_MS } from "./admin-liveness.js";
import type { AdminWorkerData, FromAdminWorker, ToAdminWorker } from "./admin-protocol.js";
import { type AdminRoutesOptions, adminSources } from "./admin-routes.js";
import { formatUrl, type ListenAddress } from "./create-http-server.js";

export { ADMIN_MAX_CONNECTIONS } from "./admin-http.js";

/** The worker's heap bounds: it holds a few connections and one scrape at a time. */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 4 };

/** Options of {@link createAdminServer}. */
export interface AdminServerOptions extends AdminRoutesOptions {
  /** Where server errors are logged. */
  readonly logger: Logger;
  /** `/healthz` fails once the main loop has not turned for this long (default 10 s). */
  readonly stallLimitMs?: number;
}

/** A started-on-demand admin server. */
export interface AdminServer {
  /** Binds `host:port` (0 picks a free port). */
  listen(host: string, port: number): Promise<ListenAddress>;
  /** The bound address once listening. */
  readonly address: ListenAddress | undefined;
  /** Stops accepting, and closes every connection (probes retry on their own). */
  close(): Promise<void>;
}

/** Creates the admin server; nothing is started until {@link AdminServer.listen}. */
export function createAdminServer(options: AdminServerOptions): AdminServer {
  const { logger } = options;
  const sources = adminSources(options);
  const beats = new SharedArrayBuffer(4);
  const counter = new Int32Array(beats);
  let worker: Worker | undefined;
  /** Whether {@link worker} is still running (its exit seen or not). */
  let running = false;
  let address: ListenAddress | undefined;
  let closing = false;
  let sentReadiness = "";

  /** Beats, and sends the readiness when it changed; a timer of the main loop. */
  const beat = (): void => {
    Atomics.add(counter, 0, 1);
    const readiness = sources.readiness();
    const text = JSON.stringify(readiness);
    if (text === sentReadiness) return;
    sentReadiness = text;
    post({ kind: "readiness", readiness });
  };
  let beater: NodeJS.Timeout | undefined;
  options.drainSignal.addEventListener("abort", beat, { once: true });

  const post = (message: ToAdminWorker): void => worker?.postMessage(message);

  async function onMessage(message: FromAdminWorker): Promise<void> {
    if (message.kind === "log") {
      logger[message.level]({ err: message.error, path: message.path }, message.msg);
    } else if (message.kind === "metrics") {
      try {
        post({ kind: "metrics", id: message.id, metrics: await sources.metrics() });
      } catch (error) {
        post({ kind: "metrics", id: message.id, error: String(error) });
      }
    }
  }

  /** Starts a worker listening on `host:port`; resolves once it listens. */
  function start(host: string, port: number): Promise<ListenAddress> {
    const readiness = sources.readiness();
    sentReadiness = JSON.stringify(readiness);
    const data: AdminWorkerData = {
      host,
      port,
      beats,
      stallLimitMs: options.stallLimitMs ?? DEFAULT_STALL_LIMIT_MS,
      readiness,
    };
    const started = startModuleWorker(siblingModule(import.meta.url, "admin-worker"), {
      workerData: data,
      resourceLimits: WORKER_LIMITS,
    });
    worker = started;
    running = true;
    started.unref();
    started.on("message", (message: FromAdminWorker) => void onMessage(message));
    return new Promise((resolve, reject) => {
      const onListening = (message: FromAdminWorker): void => {
        if (message.kind === "listening") {
          started.off("message", onListening);
          resolve({
            host: message.host,
            port: message.port,
            url: formatUrl(message.host, message.port),
          });
        } else if (message.kind === "listen-failed") {
          started.off("message", onListening);
          reject(Object.assign(new Error(message.message), { code: message.code }));
          void started.terminate();
        }
      };
      started.on("message", onListening);
      started.once("error", (error) => {
        logger.error({ err: error }, "the admin worker failed");
        reject(error);
      });
      started.once("exit", (code) => {
        running = false;
        reject(new Error(`the admin worker exited with code ${code} before listening`));
        if (closing || address === undefined) return;
        logger.error({ code }, "the admin worker exited: the admin port is gone");
      });
    });
  }

  return {
    async listen(host, port) {
      address = await start(host, port);
      beater = setInterval(beat, BEAT_INTERVAL_MS);
      beater.unref();
      return address;
    },
    get address() {
      return address;
    },
    async close() {
      if (closing || worker === undefined) return;
      closing = true;
      clearInterval(beater);
      address = undefined;
      if (!running) return;
      const current = worker;
      const closed = new Promise<void>((resolve) => {
        current.on("message", (message: FromAdminWorker) => {
          if (message.kind === "closed") resolve();
        });
        current.once("exit", () => resolve());
      });
      current.postMessage({ kind: "close" } satisfies ToAdminWorker);
      await closed;
      await current.terminate();
    },
  };
}
