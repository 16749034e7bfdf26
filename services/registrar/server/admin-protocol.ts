/**
 * The messages between the registrar's main thread and its admin worker
 * (`admin-server.ts` and `admin-worker.ts`). Structured-clone data only.
 * The beats travel in shared memory, not in messages (a message would wait
 * in the same queue as the work that delays the loop).
 */
import type { MetricsText } from "./admin-routes.js";
import type { Readiness } from "./create-http-server.js";

/** What the worker is started with (its `workerData`). */
export interface AdminWorkerData {
  readonly host: string;
  readonly port: number;
  /** One Int32 the main thread increments every beat. */
  readonly beats: SharedArrayBuffer;
  /** See `admin-liveness.ts`. */
  readonly stallLimitMs: number;
  /** The readiness at start. */
  readonly readiness: Readiness;
}

/** Main thread → worker. */
export type ToAdminWorker =
  /** The readiness changed. */
  | { readonly kind: "readiness"; readonly readiness: Readiness }
  /** The answer to {@link FromAdminWorker} `metrics` number `id`. */
  | {
      readonly kind: "metrics";
      readonly id: number;
      readonly metrics?: MetricsText;
      readonly error?: string;
    }
  /** Stop listening and close every connection, then say `closed`. */
  | { readonly kind: "close" };

/** Worker → main thread. */
export type FromAdminWorker =
  | { readonly kind: "listening"; readonly host: string; readonly port: number }
  | { readonly kind: "listen-failed"; readonly message: string; readonly code?: string }
  /** A scrape wants the metrics; answered with the same `id`. */
  | { readonly kind: "metrics"; readonly id: number }
  /** Something for the main thread's log (the worker has no logger). */
  | {
      readonly kind: "log";
      readonly level: "warn" | "error";
      readonly msg: string;
      readonly error: string;
      readonly path?: string;
    }
  | { readonly kind: "closed" };
