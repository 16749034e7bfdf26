/**
 * The handshake cost, as new connections per second to a registrar: each
 * connection is opened the way the agent opens one (its HTTP/2 client, h2c
 * or TLS with its X.509-SVID; a full handshake every time, no session
 * resumed), makes one ListConfig call and is closed. `concurrency` loops run
 * side by side in this process for `seconds`. The CPU time the server and
 * this process spent per connection is the cost that other load on the
 * machine does not change much (the rate it does).
 */
import { createRegistrarConnection } from "../../clients/agent/registrar-connection.js";
import type { ClientTlsOptions } from "../../services/runtime/tls/client-tls.js";
import { readCpuSeconds } from "../proc-stats.js";
import { type LatencySummary, summarize } from "../stats.js";
import { preciseNow } from "../worker-protocol.js";

/** What {@link measureConnectionRate} saw. */
export interface ConnectionRate {
  /** Loops run side by side. */
  readonly concurrency: number;
  /** Connections whose call succeeded. */
  readonly connections: number;
  /** Connections whose call failed (each counted, none retried). */
  readonly failures: number;
  /** The measured window, in seconds. */
  readonly seconds: number;
  /** Successful connections per second. */
  readonly perSecond: number;
  /** Connect + handshake + the call, per successful connection (ms). */
  readonly latency: LatencySummary;
  /** CPU time (user + system) the server process spent per connection, in ms; NaN without `serverPid`. */
  readonly serverCpuMs: number;
  /** CPU time this process spent per connection, in ms. */
  readonly clientCpuMs: number;
}

/** Options of {@link measureConnectionRate}. */
export interface ConnectionRateOptions {
  /** `http://` (h2c) or `https://` with `tls`. */
  readonly baseUrl: string;
  readonly tls?: ClientTlsOptions;
  /** The service each ListConfig call asks for. */
  readonly service: string;
  readonly concurrency: number;
  readonly seconds: number;
  /** The server's process id, to read its CPU time (Linux /proc). */
  readonly serverPid?: number;
}

/** Opens, calls on and closes connections for `options.seconds`; never throws on a failed call. */
export async function measureConnectionRate(
  options: ConnectionRateOptions,
): Promise<ConnectionRate> {
  const latencies: number[] = [];
  let failures = 0;
  const serverCpu = () =>
    options.serverPid === undefined
      ? Number.NaN
      : (readCpuSeconds(options.serverPid) ?? Number.NaN);
  const server0 = serverCpu();
  const client0 = process.cpuUsage();
  const t0 = preciseNow();
  const deadline = t0 + options.seconds * 1_000;
  const loop = async (): Promise<void> => {
    while (preciseNow() < deadline) {
      const started = preciseNow();
      const connection = createRegistrarConnection({
        baseUrl: options.baseUrl,
        pingIntervalMs: 3_600_000,
        ...(options.tls === undefined ? {} : { tls: options.tls }),
      });
      try {
        await connection.client.listConfig({ services: [options.service] }, { timeoutMs: 10_000 });
        latencies.push(preciseNow() - started);
      } catch {
        failures++;
      } finally {
        connection.close();
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, loop));
  const seconds = (preciseNow() - t0) / 1_000;
  const client = process.cpuUsage(client0);
  const count = Math.max(1, latencies.length);
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    concurrency: options.concurrency,
    connections: latencies.length,
    failures,
    seconds: Math.round(seconds * 100) / 100,
    perSecond: Math.round((latencies.length / seconds) * 10) / 10,
    latency: summarize(latencies),
    serverCpuMs: round(((serverCpu() - server0) * 1_000) / count),
    clientCpuMs: round((client.user + client.system) / 1_000 / count),
  };
}
