/**
 * A kubelet-like prober of one URL (`probe-loop.ts`) in a worker thread of
 * its own: the hostile bench's coordinator runs the polite client and reads
 * the registrar's metrics on its main thread, and a probe timed on that
 * loop would count the coordinator's own delays as the registrar's.
 */
import { once } from "node:events";
import { siblingModule, startModuleWorker } from "../../services/runtime/module-worker.js";
import type { ProbeSummary } from "./probe-loop.js";
import type { ProbeWorkerData } from "./probe-worker.js";

export type { ProbeSummary } from "./probe-loop.js";

/** A running prober. */
export interface HealthProber {
  /** What was seen since the last call (or the start), and starts a new window. */
  take(): Promise<ProbeSummary>;
  /** Stops probing. */
  stop(): Promise<void>;
}

/** Probes `url` every `intervalMs`; a probe not answered 200 within `timeoutMs` fails. */
export function startProber(url: string, intervalMs = 200, timeoutMs = 1_000): HealthProber {
  const data: ProbeWorkerData = { url, intervalMs, timeoutMs };
  const worker = startModuleWorker(siblingModule(import.meta.url, "probe-worker"), {
    workerData: data,
  });
  const failed = once(worker, "error").then(([error]) => {
    throw error;
  });
  failed.catch(() => undefined);
  return {
    async take() {
      const answer = once(worker, "message").then(([summary]) => summary as ProbeSummary);
      worker.postMessage("take");
      return Promise.race([answer, failed]);
    },
    async stop() {
      const exited = once(worker, "exit");
      worker.postMessage("stop");
      await exited;
    },
  };
}
