/**
 * Gauges of what the network front holds now, computed when scraped: open
 * connections and the unfinished request bodies it waits for, the
 * quantities its limits bound (`server-limits.ts`).
 */
import { Gauge, type Registry } from "prom-client";

/** Where {@link registerServerGauges} reads its values. */
export interface ServerGaugeSources {
  /** Open TCP connections (HTTP/1.1, HTTP/2 and not yet sniffed). */
  connections(): number;
  /** HTTP/2 streams open over all connections. */
  openStreams(): number;
  /** Requests waiting for their body. */
  pendingRequests(): number;
  /** Bytes those unfinished bodies hold. */
  pendingRequestBytes(): number;
  /** Unary calls being answered. */
  callsInFlight(): number;
  /** Messages waiting for a place to be compressed (`bounded-compression.ts`). */
  compressionsWaiting(): number;
}

/**
 * Registers `aether_config_server_connections`,
 * `aether_config_server_open_streams`,
 * `aether_config_server_pending_requests`,
 * `aether_config_server_pending_request_bytes`,
 * `aether_config_server_calls_in_flight` and
 * `aether_config_server_compressions_waiting` in `registry`.
 */
export function registerServerGauges(registry: Registry, sources: ServerGaugeSources): void {
  const gauges: [string, string, () => number][] = [
    ["aether_config_server_connections", "Open TCP connections.", sources.connections],
    [
      "aether_config_server_open_streams",
      "HTTP/2 streams open over all connections.",
      sources.openStreams,
    ],
    [
      "aether_config_server_pending_requests",
      "Requests whose body is still arriving.",
      sources.pendingRequests,
    ],
    [
      "aether_config_server_pending_request_bytes",
      "Bytes held by request bodies still arriving.",
      sources.pendingRequestBytes,
    ],
    [
      "aether_config_server_calls_in_flight",
      "Unary calls being answered (admitted, response not yet closed).",
      sources.callsInFlight,
    ],
    [
      "aether_config_server_compressions_waiting",
      "Messages waiting for one of the few places where messages are gzip-compressed.",
      sources.compressionsWaiting,
    ],
  ];
  for (const [name, help, read] of gauges) {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  }
}
