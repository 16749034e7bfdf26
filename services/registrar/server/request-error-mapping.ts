/**
 * Makes a request whose message does not decode fail with InvalidArgument, in
 * every protocol (Connect unary and streaming, gRPC, gRPC-Web) and for every
 * registered RPC, instead of the Internal that connect-es 2.1.2 gives it: its
 * binary parser throws `ConnectError("parse binary: …", Internal)`, and a
 * Connect GET whose `message` parameter is not base64 fails with a plain Error
 * that becomes "internal error". connect-es has no option to change either
 * (its JSON parser already answers InvalidArgument).
 *
 * The remapping is decided by where a failure happens, not by its message:
 *
 * - Streaming RPCs (server, client and bidi streaming) receive their input as
 *   an async iterable that splits, decompresses and parses the request
 *   envelopes lazily, and {@link createRequestDecodingInterceptor the request decoding interceptor} is the outermost
 *   interceptor, so it wraps that iterable: an error it throws comes from
 *   reading the request, and when it is Internal (or not a ConnectError) it is
 *   rethrown as InvalidArgument. connect-es then encodes it as each protocol
 *   requires (Connect end-stream message, gRPC trailers, gRPC-Web trailer
 *   frame).
 * - Unary RPCs have their request read and parsed by the protocol handler
 *   before any interceptor runs, so the error never passes through one. The
 *   interceptor instead marks in the call's context values that the request
 *   decoded; each unary {@link UniversalHandler} is wrapped, and when its
 *   response carries an Internal error and the mark is missing, the failure
 *   happened before the implementation and its interceptors were reached,
 *   that is while reading the request, and the response is rewritten to
 *   InvalidArgument: HTTP 400 with a Connect error body, or `grpc-status: 3`
 *   in the gRPC trailers or gRPC-Web trailer frame.
 *
 * An error raised once the request has decoded (by an interceptor, by the
 * implementation, or while serializing the response) is never touched.
 */
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  createContextKey,
  createContextValues,
  type Interceptor,
  type MethodImpl,
  type ServiceImpl,
} from "@connectrpc/connect";
import {
  createAsyncIterable,
  encodeEnvelope,
  type UniversalHandler,
  type UniversalHandlerOptions,
  type UniversalServerRequest,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  errorFromJsonBytes,
  errorToJsonBytes,
  headerContentType,
  headerUnaryContentLength,
  headerUnaryEncoding,
} from "@connectrpc/connect/protocol-connect";
import {
  findTrailerError,
  headerGrpcMessage,
  headerGrpcStatus,
  headerStatusDetailsBin,
  setTrailerStatus,
} from "@connectrpc/connect/protocol-grpc";
import {
  contentTypeRegExp as grpcWebContentTypeRegExp,
  trailerFlag,
  trailerParse,
  trailerSerialize,
} from "@connectrpc/connect/protocol-grpc-web";

/** How the message of every remapped error starts. */
export const REQUEST_DECODING_ERROR_PREFIX = "the request message does not decode: ";

/** How connect-es starts the message of a binary request parse failure. */
const PARSE_BINARY_PREFIX = "parse binary: ";

/** Set by {@link createRequestDecodingInterceptor the request decoding interceptor}: the request decoded and the RPC is invoked. */
const requestDecoded = createContextKey(false, { description: "request message decoded" });

/**
 * The InvalidArgument error for a request that failed to decode with
 * `reason`; connect-es's "parse binary: " prefix is replaced by
 * {@link REQUEST_DECODING_ERROR_PREFIX}.
 */
export function decodingError(reason: string, cause?: unknown): ConnectError {
  const detail = reason.startsWith(PARSE_BINARY_PREFIX)
    ? reason.slice(PARSE_BINARY_PREFIX.length)
    : reason;
  return new ConnectError(
    `${REQUEST_DECODING_ERROR_PREFIX}${detail}`,
    Code.InvalidArgument,
    undefined,
    undefined,
    cause,
  );
}

/**
 * What an error thrown while reading the request becomes: Internal errors and
 * errors that are not ConnectErrors (which connect-es would answer as
 * Internal) become InvalidArgument; the others keep their code.
 */
function requestReadingError(error: unknown): unknown {
  if (error instanceof ConnectError) {
    return error.code === Code.Internal ? decodingError(error.rawMessage, error) : error;
  }
  return decodingError(error instanceof Error ? error.message : String(error), error);
}

/**
 * Told of each call whose request message did not decode (the method's
 * name): such a call never reaches the implementation, so it would
 * otherwise be counted nowhere.
 */
export type UndecodedRequestHook = (method: string) => void;

/**
 * `input`, with the errors its iteration throws passed through
 * {@link requestReadingError} (and reported to `onUndecoded`).
 */
async function* mapInputErrors<T>(
  input: AsyncIterable<T>,
  onUndecoded: () => void,
): AsyncGenerator<T, void, undefined> {
  const iterator = input[Symbol.asyncIterator]();
  let open = true;
  try {
    for (;;) {
      let result: IteratorResult<T>;
      try {
        result = await iterator.next();
      } catch (error) {
        open = false;
        const mapped = requestReadingError(error);
        if (mapped instanceof ConnectError && mapped.code === Code.InvalidArgument) onUndecoded();
        throw mapped;
      }
      if (result.done === true) {
        open = false;
        return;
      }
      yield result.value;
    }
  } finally {
    // The consumer stopped early: let the request pipeline clean up.
    if (open) await iterator.return?.();
  }
}

/**
 * The interceptor that must run outermost on every RPC (see the module
 * comment): it marks the call's context values (the request decoded) and, for
 * streaming RPCs, maps the errors of reading the request messages.
 */
export function createRequestDecodingInterceptor(
  onUndecoded: UndecodedRequestHook = () => {},
): Interceptor {
  return (next) => async (request) => {
    request.contextValues.set(requestDecoded, true);
    if (!request.stream) return next(request);
    const report = () => onUndecoded(request.method.name);
    return next({ ...request, message: mapInputErrors(request.message, report) });
  };
}

/** `interceptors`, with a request decoding interceptor (reporting to `onUndecoded`) first. */
export function withRequestDecodingInterceptor(
  interceptors: readonly Interceptor[] = [],
  onUndecoded?: UndecodedRequestHook,
): Interceptor[] {
  return [createRequestDecodingInterceptor(onUndecoded), ...interceptors];
}

async function readAll(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * Why a Connect GET request's `message` query parameter does not decode as
 * base64, or undefined when it does (or the request is not such a GET).
 */
function base64Problem(request: UniversalServerRequest): string | undefined {
  if (request.method !== "GET") return undefined;
  const query = new URL(request.url).searchParams;
  if (query.get("base64") !== "1") return undefined;
  try {
    base64Decode(query.get("message") ?? "");
    return undefined;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return `the message query parameter is not base64: ${reason}`;
  }
}

/** Replaces the gRPC status in `trailer` (an Internal error) with `error`. */
function replaceGrpcStatus(trailer: Headers, error: ConnectError): void {
  trailer.delete(headerGrpcStatus);
  trailer.delete(headerGrpcMessage);
  trailer.delete(headerStatusDetailsBin);
  setTrailerStatus(trailer, error);
}

/** A Connect unary error response: HTTP status and JSON error body. */
async function remapConnectUnary(
  request: UniversalServerRequest,
  response: UniversalServerResponse,
): Promise<UniversalServerResponse> {
  // connect-es compresses an error body only from 1 KiB (compressMinBytes);
  // the errors of a request that does not decode are far shorter.
  if (response.body === undefined || response.header?.has(headerUnaryEncoding) === true) {
    return response;
  }
  const bytes = await readAll(response.body);
  const error = errorFromJsonBytes(bytes, undefined, new ConnectError("", Code.Unknown));
  if (error.code !== Code.Internal) {
    return { ...response, body: createAsyncIterable([bytes]) };
  }
  // A base64 failure reaches the client as the bare "internal error".
  const mapped = decodingError(base64Problem(request) ?? error.rawMessage, error);
  const body = errorToJsonBytes(mapped, undefined);
  const header = new Headers(response.header);
  header.set(headerUnaryContentLength, body.byteLength.toString(10));
  return {
    ...response,
    status: codeToHttpStatus(mapped.code),
    header,
    body: createAsyncIterable([body]),
  };
}

/** A gRPC-Web unary error response: a body of one (uncompressed) trailer frame. */
async function remapGrpcWebUnary(
  response: UniversalServerResponse,
): Promise<UniversalServerResponse> {
  if (response.body === undefined) return response;
  const bytes = await readAll(response.body);
  const unchanged = { ...response, body: createAsyncIterable([bytes]) };
  // connect-es compresses a trailer frame only from 1 KiB (compressMinBytes).
  if (bytes.byteLength < 5 || bytes[0] !== trailerFlag) return unchanged;
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(1);
  if (5 + length !== bytes.byteLength) return unchanged;
  const trailer = trailerParse(bytes.subarray(5));
  const error = findTrailerError(trailer);
  if (error?.code !== Code.Internal) return unchanged;
  replaceGrpcStatus(trailer, decodingError(error.rawMessage, error));
  return {
    ...response,
    body: createAsyncIterable([encodeEnvelope(trailerFlag, trailerSerialize(trailer))]),
  };
}

/**
 * Rewrites the response of a unary call whose request did not decode (the
 * implementation was not reached) when it carries an Internal error.
 */
async function remapUnaryResponse(
  request: UniversalServerRequest,
  response: UniversalServerResponse,
): Promise<UniversalServerResponse> {
  // Only the gRPC handler answers with trailers; by the time it resolves, a
  // unary call has run to its end and the trailers hold its status.
  if (response.trailer !== undefined) {
    const error = findTrailerError(response.trailer);
    if (error?.code === Code.Internal) {
      replaceGrpcStatus(response.trailer, decodingError(error.rawMessage, error));
    }
    return response;
  }
  const contentType = response.header?.get(headerContentType) ?? "";
  if (grpcWebContentTypeRegExp.test(contentType)) return remapGrpcWebUnary(response);
  if (response.status !== 200 && /^application\/json\b/i.test(contentType)) {
    return remapConnectUnary(request, response);
  }
  return response;
}

/**
 * Wraps a unary RPC's handler (see the module comment); the wrapper keeps the
 * handler's properties (method, service, requestPath, protocolNames,
 * allowedMethods, supportedContentType). Handlers of streaming RPCs are
 * returned as they are: {@link createRequestDecodingInterceptor the request decoding interceptor} covers them.
 */
export function mapUnaryRequestDecodingErrors(
  handler: UniversalHandler,
  onUndecoded: UndecodedRequestHook = () => {},
): UniversalHandler {
  if (handler.method.methodKind !== "unary") return handler;
  async function handleMappingRequestDecodingErrors(
    request: UniversalServerRequest,
  ): Promise<UniversalServerResponse> {
    const contextValues = request.contextValues ?? createContextValues();
    const response = await handler({ ...request, contextValues });
    if (contextValues.get(requestDecoded)) return response;
    onUndecoded(handler.method.name);
    return remapUnaryResponse(request, response);
  }
  return Object.assign(handleMappingRequestDecodingErrors, {
    protocolNames: handler.protocolNames,
    service: handler.service,
    method: handler.method,
    requestPath: handler.requestPath,
    allowedMethods: handler.allowedMethods,
    supportedContentType: handler.supportedContentType,
  });
}

/** Per-RPC options, with {@link createRequestDecodingInterceptor the request decoding interceptor} first when they replace the interceptors. */
function withInterceptor(
  options: Partial<UniversalHandlerOptions> | undefined,
  onUndecoded: UndecodedRequestHook | undefined,
): Partial<UniversalHandlerOptions> | undefined {
  if (options === undefined || !("interceptors" in options)) return options;
  return {
    ...options,
    interceptors: withRequestDecodingInterceptor(options.interceptors, onUndecoded),
  };
}

/**
 * A router that registers on `router` with request decoding failures mapped
 * to InvalidArgument: each handler it adds is wrapped with
 * {@link mapUnaryRequestDecodingErrors}, and per-RPC options that replace the
 * interceptors get {@link createRequestDecodingInterceptor the request decoding interceptor} first. `router` itself
 * must have been created with {@link withRequestDecodingInterceptor}.
 */
export class RequestDecodingErrorRouter implements ConnectRouter {
  readonly #router: ConnectRouter;
  readonly #onUndecoded: UndecodedRequestHook | undefined;

  /** Registers on `router`; calls that never reach their implementation go to `onUndecoded`. */
  constructor(router: ConnectRouter, onUndecoded?: UndecodedRequestHook) {
    this.#router = router;
    this.#onUndecoded = onUndecoded;
  }

  get handlers(): UniversalHandler[] {
    return this.#router.handlers;
  }

  service<T extends DescService>(
    service: T,
    implementation: Partial<ServiceImpl<T>>,
    options?: Partial<UniversalHandlerOptions>,
  ): this {
    this.#register(() =>
      this.#router.service(service, implementation, withInterceptor(options, this.#onUndecoded)),
    );
    return this;
  }

  rpc<M extends DescMethod>(
    method: M,
    impl: MethodImpl<M>,
    options?: Partial<UniversalHandlerOptions>,
  ): this {
    this.#register(() =>
      this.#router.rpc(method, impl, withInterceptor(options, this.#onUndecoded)),
    );
    return this;
  }

  #register(add: () => void): void {
    const handlers = this.#router.handlers;
    const from = handlers.length;
    add();
    for (let i = from; i < handlers.length; i++) {
      const handler = handlers[i];
      if (handler !== undefined) {
        handlers[i] = mapUnaryRequestDecodingErrors(handler, this.#onUndecoded);
      }
    }
  }
}
