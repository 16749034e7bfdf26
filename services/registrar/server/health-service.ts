/**
 * The standard gRPC health service (grpc.health.v1.Health), answering from a
 * caller-supplied status function, so load balancers, Kubernetes gRPC probes
 * and `grpc-health-probe` can ask the registrar whether it serves.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type Health,
  HealthCheckResponse_ServingStatus,
  HealthCheckResponseSchema,
} from "../../../gen/grpc/health/v1/health_pb.js";

/** The statuses a {@link HealthServiceOptions.status} function may report. */
export type HealthStatus =
  | HealthCheckResponse_ServingStatus.SERVING
  | HealthCheckResponse_ServingStatus.NOT_SERVING;

/** Options of {@link createHealthService}. */
export interface HealthServiceOptions {
  /**
   * The status of the named service (`""` is the server as a whole), or
   * undefined when the name is not a known service. Called on every Check
   * and whenever a Watch looks again; it must be cheap and must not throw.
   */
  readonly status: (service: string) => HealthStatus | undefined;
  /**
   * The server's drain signal. Once it aborts, known services report
   * NOT_SERVING, and each open Watch sends NOT_SERVING (if it had not) and
   * then ends normally (status OK).
   */
  readonly drainSignal?: AbortSignal;
  /**
   * How often an open Watch reads the status function again, in
   * milliseconds, in case a change was not announced with
   * {@link HealthService.notify}. Default 1000; 0 or Infinity turns polling
   * off.
   */
  readonly pollIntervalMs?: number;
}

/** The health service created by {@link createHealthService}. */
export interface HealthService {
  /** The grpc.health.v1.Health implementation, for `router.service(Health, …)`. */
  readonly implementation: ServiceImpl<typeof Health>;
  /**
   * Announces that a status may have changed: every open Watch reads the
   * status function again at once and sends an update if its status differs.
   */
  notify(): void;
}

/** The default of {@link HealthServiceOptions.pollIntervalMs}. */
export const DEFAULT_HEALTH_POLL_INTERVAL_MS = 1_000;

/**
 * Creates the health service. Check answers SERVING or NOT_SERVING, or fails
 * with NOT_FOUND for an unknown service. Watch sends the current status at
 * once (SERVICE_UNKNOWN for an unknown service, without ending the stream),
 * then one message per change, and ends with OK when the drain signal aborts.
 */
export function createHealthService(options: HealthServiceOptions): HealthService {
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_HEALTH_POLL_INTERVAL_MS;
  const poll = Number.isFinite(pollIntervalMs) && pollIntervalMs > 0;
  const waiters = new Set<() => void>();
  const draining = () => options.drainSignal?.aborted === true;

  const statusOf = (service: string): HealthCheckResponse_ServingStatus | undefined => {
    const status = options.status(service);
    if (status === undefined) return undefined;
    return draining() ? HealthCheckResponse_ServingStatus.NOT_SERVING : status;
  };

  /** Resolves on notify(), after one poll interval, or when a signal aborts. */
  const nextLook = (signals: readonly AbortSignal[]) =>
    new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        waiters.delete(wake);
        for (const signal of signals) signal.removeEventListener("abort", wake);
        resolve();
      };
      const timer = poll ? setTimeout(wake, pollIntervalMs) : undefined;
      waiters.add(wake);
      for (const signal of signals) signal.addEventListener("abort", wake);
      if (signals.some((signal) => signal.aborted)) wake();
    });

  return {
    implementation: {
      check(request) {
        const status = statusOf(request.service);
        if (status === undefined) {
          // Quote at most 200 characters: the message travels in a header.
          const name = request.service;
          const shown = name.length > 200 ? `${name.slice(0, 200)}…` : name;
          throw new ConnectError(`unknown service ${JSON.stringify(shown)}`, Code.NotFound);
        }
        return create(HealthCheckResponseSchema, { status });
      },
      async *watch(request, context) {
        const signals =
          options.drainSignal === undefined
            ? [context.signal]
            : [context.signal, options.drainSignal];
        let sent: HealthCheckResponse_ServingStatus | undefined;
        while (!context.signal.aborted) {
          const status =
            statusOf(request.service) ?? HealthCheckResponse_ServingStatus.SERVICE_UNKNOWN;
          if (status !== sent) {
            sent = status;
            yield create(HealthCheckResponseSchema, { status });
          }
          if (draining()) return;
          await nextLook(signals);
        }
      },
    },
    notify() {
      for (const wake of [...waiters]) wake();
    },
  };
}
