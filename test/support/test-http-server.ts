import { execFile } from "node:child_process";
import { connect } from "node:net";
import { Counter, Registry } from "prom-client";
import { ConfigService } from "../../gen/aether/registry/v1/config_service_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import {
  createHttpServer,
  type HttpServer,
  type HttpServerOptions,
  type ListenAddress,
} from "../../services/registrar/server/create-http-server.js";
import {
  createHealthService,
  type HealthService,
  type HealthStatus,
} from "../../services/registrar/server/health-service.js";
import { registerReflectionServices } from "../../services/registrar/server/reflection-service.js";

/** A registrar HTTP server on 127.0.0.1 with health and reflection, for tests. */
export interface TestHttpServer extends ListenAddress {
  readonly server: HttpServer;
  readonly health: HealthService;
  /** The counter `/metrics` shows as `test_requests_total`. */
  readonly counter: Counter;
  /** Sets what the readiness function reports. */
  setReadiness(ready: boolean, reason?: string): void;
  /** Sets a service's health status (undefined: unknown); "" is the overall status. */
  setStatus(service: string, status: HealthStatus | undefined): void;
}

/**
 * Starts a server on an ephemeral port of 127.0.0.1 serving grpc.health.v1
 * (overall status SERVING) and server reflection for Health and
 * ConfigService (whose implementation is not registered). Close it with
 * `server.close()`.
 */
export async function startTestHttpServer(
  options: Partial<HttpServerOptions> = {},
): Promise<TestHttpServer> {
  const statuses = new Map<string, HealthStatus>([["", HealthCheckResponse_ServingStatus.SERVING]]);
  let readiness = { ready: false, reason: "no snapshot loaded yet" } as {
    ready: boolean;
    reason?: string;
  };
  const metricsRegistry = new Registry();
  const counter = new Counter({
    name: "test_requests_total",
    help: "A counter for the tests.",
    registers: [metricsRegistry],
  });
  let health: HealthService | undefined;
  const server = createHttpServer({
    readiness: () => readiness,
    metricsRegistry,
    routes: (router, { drainSignal }) => {
      health = createHealthService({ status: (name) => statuses.get(name), drainSignal });
      router.service(Health, health.implementation);
      registerReflectionServices(router, [Health, ConfigService]);
    },
    ...options,
  });
  const address = await server.listen("127.0.0.1", 0);
  if (health === undefined) throw new Error("routes were not registered");
  const registered = health;
  return {
    ...address,
    server,
    health: registered,
    counter,
    setReadiness(ready, reason) {
      readiness = reason === undefined ? { ready } : { ready, reason };
    },
    setStatus(service, status) {
      if (status === undefined) statuses.delete(service);
      else statuses.set(service, status);
      registered.notify();
    },
  };
}

/** The outcome of {@link runCommand}. */
export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command (no shell) and resolves with its exit code and output. */
export function runCommand(
  command: string,
  args: readonly string[],
  timeoutMs = 20_000,
): Promise<CommandResult> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Options of {@link sendRawBytes}. */
export interface RawSendOptions {
  /** Half-close the connection after sending (default true). */
  readonly end?: boolean;
  /** Destroy the connection right after sending instead of reading a reply. */
  readonly abandon?: boolean;
  /** Give up waiting for the server to close after this long (default 5000 ms). */
  readonly timeoutMs?: number;
}

/**
 * Opens a TCP connection, writes `bytes`, and resolves with everything the
 * server sent back before it closed the connection (or the timeout passed,
 * or at once with `abandon`).
 */
export function sendRawBytes(
  port: number,
  bytes: Uint8Array | string,
  options: RawSendOptions = {},
): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: "127.0.0.1", port });
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(Buffer.concat(chunks));
    };
    const timer = setTimeout(finish, options.timeoutMs ?? 5_000);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", finish);
    socket.on("close", finish);
    socket.write(bytes, () => {
      if (options.abandon === true) finish();
      else if (options.end ?? true) socket.end();
    });
  });
}
