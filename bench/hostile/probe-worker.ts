/**
 * The worker thread of a health prober (`health-prober.ts`): runs one
 * {@link startProbeLoop} and answers `take` with its summary, `stop` by
 * stopping and closing.
 */
import { parentPort, workerData } from "node:worker_threads";
import { startProbeLoop } from "./probe-loop.js";

/** What the worker is started with. */
export interface ProbeWorkerData {
  readonly url: string;
  readonly intervalMs: number;
  readonly timeoutMs: number;
}

const port = parentPort;
if (port === null) throw new Error("probe-worker.ts runs as a worker thread only");
const { url, intervalMs, timeoutMs } = workerData as ProbeWorkerData;
const loop = startProbeLoop(url, intervalMs, timeoutMs);
port.on("message", (message: "take" | "stop") => {
  if (message === "take") {
    port.postMessage(loop.take());
  } else {
    loop.stop();
    port.close();
  }
});
