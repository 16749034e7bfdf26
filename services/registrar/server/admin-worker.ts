/**
 * The admin worker: a worker thread serving the admin port
 * (`admin-http.ts`) on an event loop of its own, so probes are answered in
 * milliseconds however busy the main thread is. `/healthz` is decided here
 * from the main thread's beats (`admin-liveness.ts`), `/readyz` from the
 * readiness the main thread last sent, `/metrics` by asking the main thread
 * (a scrape waits for a busy main loop, up to {@link METRICS_TIMEOUT_MS}).
 * Started by `admin-server.ts`; speaks `admin-protocol.ts`.
 */
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { parentPort, workerData } from "node:worker_threads";
import { createAdminHttpServer } from "./admin-http.js";
import {
  BEAT_INTERVAL_MS,
  type BeatWatch,
  livenessResponse,
  observeBeats,
} from "./admin-liveness.js";
import type { AdminWorkerData, FromAdminWorker, ToAdminWorker } from "./admin-protocol.js";
import type { MetricsText } from "./admin-routes.js";
import type { Readiness } from "./create-http-server.js";

/** How long a scrape waits for the main thread's metrics. */
export const METRICS_TIMEOUT_MS = 10_000;

const port = parentPort;
if (port === null) throw new Error("admin-worker.ts runs as a worker thread only");
const data = workerData as AdminWorkerData;
const beats = new Int32Array(data.beats);
let readiness: Readiness = data.readiness;
let watch: BeatWatch = observeBeats(undefined, Atomics.load(beats, 0), performance.now());
const watchBeats = (): BeatWatch => {
  watch = observeBeats(watch, Atomics.load(beats, 0), performance.now());
  return watch;
};
// Sampled between probes too, so a change is dated within a beat or two.
const sampler = setInterval(watchBeats, BEAT_INTERVAL_MS);

let nextId = 0;
const pending = new Map<number, (answer: ToAdminWorker & { kind: "metrics" }) => void>();
const send = (message: FromAdminWorker): void => port.postMessage(message);

function askMetrics(): Promise<MetricsText> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      pending.delete(id);
      reject(
        new Error(
          `the registrar's main thread did not give its metrics within ${METRICS_TIMEOUT_MS} ms`,
        ),
      );
    }, METRICS_TIMEOUT_MS);
    pending.set(id, (answer) => {
      clearTimeout(timer);
      if (answer.metrics !== undefined) resolve(answer.metrics);
      else reject(new Error(answer.error ?? "no metrics"));
    });
    send({ kind: "metrics", id });
  });
}

const server = createAdminHttpServer(
  {
    readiness: () => readiness,
    metrics: askMetrics,
    liveness: () => livenessResponse(watchBeats(), performance.now(), data.stallLimitMs),
  },
  ({ msg, error, path }) =>
    send({
      kind: "log",
      level: msg === "admin server error" ? "error" : "warn",
      msg,
      error: error instanceof Error ? error.message : String(error),
      path,
    }),
);

port.on("message", (message: ToAdminWorker) => {
  switch (message.kind) {
    case "readiness":
      readiness = message.readiness;
      return;
    case "metrics":
      pending.get(message.id)?.(message);
      pending.delete(message.id);
      return;
    case "close":
      clearInterval(sampler);
      server.close(() => send({ kind: "closed" }));
      server.closeAllConnections();
      return;
  }
});

server.once("error", (error: NodeJS.ErrnoException) =>
  send({ kind: "listen-failed", message: error.message, code: error.code }),
);
server.listen({ host: data.host, port: data.port }, () => {
  const bound = server.address() as AddressInfo;
  send({ kind: "listening", host: bound.address, port: bound.port });
});
