/**
 * The agent's connection to its registrar: the generated ConfigService
 * client over the Connect protocol on HTTP/2 (one multiplexed connection for
 * the stream and the polls), with an interceptor that counts the bytes of
 * every response message, and a way to drop a connection that went silent
 * (a partition or a frozen peer keeps a TCP connection open forever). Over
 * https:// the connection presents the agent's X.509-SVID with the options
 * of `services/runtime/tls/client-tls.ts`, read at each new connection: a
 * rotated certificate serves the next connection, open streams keep theirs.
 */
import { toBinary } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { ConfigService } from "../../gen/aether/registry/v1/config_service_pb.js";
import type { ClientTlsOptions } from "../../services/runtime/tls/client-tls.js";

/** Options of {@link createRegistrarConnection}. */
export interface RegistrarConnectionOptions {
  /** The registrar's base URL, for example `http://127.0.0.1:8080`. */
  readonly baseUrl: string;
  /**
   * The interval of HTTP/2 PINGs on a connection without traffic, in
   * milliseconds; an unanswered PING closes the connection. Default 15000.
   */
  readonly pingIntervalMs?: number;
  /** Called with the protobuf size of every response message, by RPC method name. */
  readonly onMessageBytes?: (method: string, bytes: number) => void;
  /** TLS for an https:// registrar (read at each new connection). */
  readonly tls?: ClientTlsOptions;
  /** More interceptors, after the byte counter (the agent's call outcomes). */
  readonly interceptors?: readonly Interceptor[];
}

/** A connection to a registrar. */
export interface RegistrarConnection {
  /** The generated client. */
  readonly client: Client<typeof ConfigService>;
  /**
   * Closes the current HTTP/2 connection and every call on it; the next call
   * opens a new connection.
   */
  drop(reason: string): void;
  /** Closes the connection for good. */
  close(): void;
}

/**
 * An interceptor that reports the size of every response message, unary or
 * streamed, as its protobuf binary encoding (what the gRPC and Connect
 * protocols put on the wire, without the 5-byte envelope and headers).
 */
export function createByteCountingInterceptor(
  report: (method: string, bytes: number) => void,
): Interceptor {
  return (next) => async (request) => {
    const response = await next(request);
    const schema = request.method.output;
    const method = request.method.name;
    if (!response.stream) {
      report(method, toBinary(schema, response.message).byteLength);
      return response;
    }
    const messages = response.message;
    return {
      ...response,
      message: (async function* () {
        for await (const message of messages) {
          report(method, toBinary(schema, message).byteLength);
          yield message;
        }
      })(),
    };
  };
}

/**
 * Makes sure every HTTP/2 session the manager opens always has an `error`
 * listener. connect-node 2.1.2 removes its own listener when a session leaves
 * the ready state, and a GOAWAY with an error code arriving after that (a
 * registrar that answers garbage and resets the connection, say) would
 * otherwise surface as an uncaught exception and end the agent. The manager
 * still sees every error while it listens; this only swallows late ones.
 */
export function guardHttp2Sessions(manager: Http2SessionManager): Http2SessionManager {
  const target = manager as unknown as { setState(state: { conn?: unknown }): void };
  const setState = target.setState.bind(manager);
  const guarded = new WeakSet<object>();
  target.setState = (state) => {
    const conn = state.conn;
    if (
      typeof conn === "object" &&
      conn !== null &&
      typeof (conn as { on?: unknown }).on === "function" &&
      !guarded.has(conn)
    ) {
      guarded.add(conn);
      (conn as { on(event: "error", listener: () => void): void }).on("error", () => undefined);
    }
    setState(state);
  };
  return manager;
}

/** Creates the connection; nothing is dialled until the first call. */
export function createRegistrarConnection(
  options: RegistrarConnectionOptions,
): RegistrarConnection {
  const pingIntervalMs = options.pingIntervalMs ?? 15_000;
  const sessionManager = guardHttp2Sessions(
    new Http2SessionManager(
      options.baseUrl,
      { pingIntervalMs, pingTimeoutMs: pingIntervalMs },
      options.tls,
    ),
  );
  const report = options.onMessageBytes;
  const transport = createConnectTransport({
    baseUrl: options.baseUrl,
    httpVersion: "2",
    sessionManager,
    interceptors: [
      ...(report === undefined ? [] : [createByteCountingInterceptor(report)]),
      ...(options.interceptors ?? []),
    ],
  });
  return {
    client: createClient(ConfigService, transport),
    drop(reason) {
      sessionManager.abort(new Error(reason));
    },
    close() {
      sessionManager.abort(new Error("the agent is stopping"));
    },
  };
}
