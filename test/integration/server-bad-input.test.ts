/**
 * Request messages that do not decode are InvalidArgument in every protocol
 * (Connect unary, Connect streaming, gRPC, gRPC-Web), for unary and streaming
 * RPCs of every registered service; JSON requests are parsed strictly; and an
 * error raised after the request decoded (by the implementation, an
 * interceptor, or the response serialization) stays Internal. Raw requests go
 * over a real loopback socket (fetch for HTTP/1.1, node:http2 for gRPC).
 */
import { connect as connectHttp2, type IncomingHttpHeaders } from "node:http2";
import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createClient,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { codeFromString } from "@connectrpc/connect/protocol-connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { Registry } from "prom-client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  ConfigService,
  ConfigView,
  ListConfigRequestSchema,
  ListConfigResponseSchema,
  WatchConfigResponseSchema,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import {
  createHttpServer,
  type HttpServer,
} from "../../services/registrar/server/create-http-server.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";

const CONFIG_SERVICE = "/aether.registry.v1.ConfigService";
const DECODE_PREFIX = "the request message does not decode: ";

/** The status code of a call that succeeded (connect-es's Code has no OK). */
const OK = 0;

/** The name of a status code, for readable assertions. */
function codeName(code: Code | typeof OK): string {
  return code === OK ? "OK" : Code[code];
}

/** What a call ended with, whatever the protocol. */
interface Outcome {
  /** The HTTP status of the response. */
  readonly httpStatus: number;
  /** The RPC status code, or {@link OK} when the call succeeded. */
  readonly code: Code | typeof OK;
  /** The error message ("" on success). */
  readonly message: string;
}

/** A 5-byte length-prefixed envelope (gRPC, gRPC-Web, Connect streaming). */
function envelope(data: Uint8Array, flags = 0): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt8(flags, 0);
  header.writeUInt32BE(data.byteLength, 1);
  return Buffer.concat([header, data]);
}

/** The envelopes of a response body. */
function splitEnvelopes(body: Buffer): { flags: number; data: Buffer }[] {
  const envelopes: { flags: number; data: Buffer }[] = [];
  let offset = 0;
  while (offset + 5 <= body.length) {
    const length = body.readUInt32BE(offset + 1);
    envelopes.push({
      flags: body.readUInt8(offset),
      data: body.subarray(offset + 5, offset + 5 + length),
    });
    offset += 5 + length;
  }
  expect(offset, "the body ends on an envelope boundary").toBe(body.length);
  return envelopes;
}

/** Bytes that are not a protobuf message: a varint that never ends (premature EOF). */
const GARBAGE = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff]);

/** A Connect unary POST (HTTP/1.1). */
async function connectUnary(
  url: string,
  path: string,
  body: Uint8Array | string,
  headers: Record<string, string> = {},
): Promise<Outcome> {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/proto", ...headers },
    body,
  });
  return connectUnaryOutcome(response);
}

/** A Connect unary GET with the request in the query string (HTTP/1.1). */
async function connectGet(
  url: string,
  path: string,
  query: Record<string, string>,
): Promise<Outcome> {
  const search = new URLSearchParams({ connect: "v1", ...query }).toString();
  return connectUnaryOutcome(await fetch(`${url}${path}?${search}`));
}

async function connectUnaryOutcome(response: Response): Promise<Outcome> {
  const text = await response.text();
  if (response.status === 200) return { httpStatus: 200, code: OK, message: "" };
  expect(response.headers.get("content-type")).toBe("application/json");
  const error = JSON.parse(text) as { code: string; message: string };
  return {
    httpStatus: response.status,
    code: codeFromString(error.code) ?? Code.Unknown,
    message: error.message,
  };
}

/** A Connect streaming POST (HTTP/1.1) whose body is `body` (already enveloped). */
async function connectStream(
  url: string,
  path: string,
  body: Uint8Array,
  contentType = "application/connect+proto",
): Promise<Outcome & { readonly messages: number }> {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": contentType },
    body,
  });
  const envelopes = splitEnvelopes(Buffer.from(await response.arrayBuffer()));
  const end = envelopes.at(-1);
  expect(end?.flags, "the stream ends with an end-stream message").toBe(0b10);
  const { error } = JSON.parse(end?.data.toString("utf8") ?? "{}") as {
    error?: { code: string; message?: string };
  };
  return {
    httpStatus: response.status,
    code: error === undefined ? OK : (codeFromString(error.code) ?? Code.Unknown),
    message: error?.message ?? "",
    messages: envelopes.length - 1,
  };
}

/** A gRPC-Web POST (HTTP/1.1) whose body is `body` (already enveloped). */
async function grpcWeb(
  url: string,
  path: string,
  body: Uint8Array,
  contentType = "application/grpc-web+proto",
): Promise<Outcome & { readonly messages: number }> {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": contentType },
    body,
  });
  const envelopes = splitEnvelopes(Buffer.from(await response.arrayBuffer()));
  const trailer = envelopes.at(-1);
  expect(trailer?.flags, "the body ends with a trailer frame").toBe(0x80);
  const fields = new Map(
    (trailer?.data.toString("utf8") ?? "")
      .split("\r\n")
      .filter((line) => line !== "")
      .map((line) => {
        const colon = line.indexOf(":");
        return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()] as const;
      }),
  );
  return {
    httpStatus: response.status,
    code: Number(fields.get("grpc-status")) as Code | typeof OK,
    message: decodeURIComponent(fields.get("grpc-message") ?? ""),
    messages: envelopes.length - 1,
  };
}

/** A gRPC call over h2c (prior knowledge) whose body is `body` (already enveloped). */
function grpc(
  url: string,
  path: string,
  body: Uint8Array,
  headers: Record<string, string> = {},
): Promise<Outcome & { readonly messages: number }> {
  return new Promise((resolve, reject) => {
    const session = connectHttp2(url);
    session.on("error", reject);
    const request = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      ...headers,
    });
    let head: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    request.on("response", (h) => {
      head = h;
    });
    request.on("trailers", (t) => {
      trailers = t;
    });
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("error", reject);
    request.on("end", () => {
      session.close();
      // A trailers-only response carries the status in its headers.
      const status = trailers["grpc-status"] ?? head["grpc-status"];
      const message = trailers["grpc-message"] ?? head["grpc-message"] ?? "";
      resolve({
        httpStatus: Number(head[":status"]),
        code: Number(status) as Code | typeof OK,
        message: decodeURIComponent(String(message)),
        messages: splitEnvelopes(Buffer.concat(chunks)).length,
      });
    });
    request.end(body);
  });
}

/** Expects a decode failure: InvalidArgument, and HTTP 400 for Connect unary (200 otherwise). */
function expectDecodeFailure(outcome: Outcome, httpStatus: number, message?: string): void {
  expect({ code: codeName(outcome.code), httpStatus: outcome.httpStatus }).toEqual({
    code: "InvalidArgument",
    httpStatus,
  });
  expect(outcome.message.startsWith(DECODE_PREFIX), outcome.message).toBe(true);
  if (message !== undefined) expect(outcome.message).toBe(`${DECODE_PREFIX}${message}`);
}

const PROTOCOLS = ["Connect", "gRPC", "gRPC-Web"] as const;
type Protocol = (typeof PROTOCOLS)[number];

/** Sends `message` (the bytes of one request message) to `path` in `protocol`. */
function call(
  protocol: Protocol,
  url: string,
  path: string,
  streaming: boolean,
  message: Uint8Array,
): Promise<Outcome> {
  switch (protocol) {
    case "Connect":
      return streaming
        ? connectStream(url, path, envelope(message))
        : connectUnary(url, path, message);
    case "gRPC":
      return grpc(url, path, envelope(message));
    case "gRPC-Web":
      return grpcWeb(url, path, envelope(message));
  }
}

/** The HTTP status a failed call has in `protocol`: 400 only for Connect unary. */
function failedHttpStatus(protocol: Protocol, streaming: boolean): number {
  return protocol === "Connect" && !streaming ? 400 : 200;
}

const METHODS = [
  { kind: "unary", path: `${CONFIG_SERVICE}/ListConfig`, streaming: false },
  { kind: "server stream", path: `${CONFIG_SERVICE}/WatchConfig`, streaming: true },
] as const;

const MATRIX = PROTOCOLS.flatMap((protocol) => METHODS.map((method) => ({ protocol, ...method })));

describe("request messages that do not decode, against an in-process registrar", () => {
  let registrar: TestRegistrar;

  beforeAll(async () => {
    registrar = await startTestRegistrar(["--cluster", "east"]);
  });
  afterAll(async () => {
    await registrar.stop();
  });

  /** After every test: the registrar still answers, in Connect JSON and binary and in gRPC. */
  afterEach(async () => {
    const json = await registrar.client.listConfig({});
    expect(json.projections).toEqual([]);
    const request = toBinary(
      ListConfigRequestSchema,
      create(ListConfigRequestSchema, { pageSize: 5 }),
    );
    const binary = await connectUnary(registrar.url, `${CONFIG_SERVICE}/ListConfig`, request);
    expect(binary).toEqual({ httpStatus: 200, code: OK, message: "" });
    const overGrpc = await grpc(registrar.url, `${CONFIG_SERVICE}/ListConfig`, envelope(request));
    expect(overGrpc).toEqual({ httpStatus: 200, code: OK, message: "", messages: 1 });
    const healthz = await fetch(`${registrar.url}/healthz`);
    expect(healthz.status).toBe(200);
  });

  it.each(MATRIX)(
    "answers $protocol $kind ($path) whose message does not parse with InvalidArgument",
    async ({ protocol, path, streaming }) => {
      const outcome = await call(protocol, registrar.url, path, streaming, GARBAGE);
      expectDecodeFailure(outcome, failedHttpStatus(protocol, streaming), "premature EOF");
    },
  );

  it.each(MATRIX)(
    "answers $protocol $kind with a JSON body sent as binary ('{}') with InvalidArgument",
    async ({ protocol, path, streaming }) => {
      const outcome = await call(protocol, registrar.url, path, streaming, Buffer.from("{}"));
      expectDecodeFailure(outcome, failedHttpStatus(protocol, streaming));
    },
  );

  it.each(MATRIX)(
    "answers $protocol $kind with a string field that is not UTF-8 with InvalidArgument",
    async ({ protocol, path, streaming }) => {
      // services (field 1, length-delimited) = 0xff 0xfe
      const badString = Buffer.from([0x0a, 0x02, 0xff, 0xfe]);
      const outcome = await call(protocol, registrar.url, path, streaming, badString);
      expectDecodeFailure(outcome, failedHttpStatus(protocol, streaming));
    },
  );

  it.each<{ what: string; query: Record<string, string>; message: string | undefined }>([
    {
      what: "a message parameter that is not base64",
      query: { encoding: "proto", base64: "1", message: "***" },
      message: "the message query parameter is not base64: invalid base64 string",
    },
    {
      what: "a base64 message parameter that is not a protobuf message",
      query: { encoding: "proto", base64: "1", message: GARBAGE.toString("base64url") },
      message: "premature EOF",
    },
    {
      what: "a raw message parameter that is not a protobuf message",
      query: { encoding: "proto", message: "\u00ff" },
      message: undefined,
    },
  ])(
    "answers a Connect GET of ListConfig with $what with HTTP 400 invalid_argument",
    async ({ query, message }) => {
      const outcome = await connectGet(registrar.url, `${CONFIG_SERVICE}/ListConfig`, query);
      expectDecodeFailure(outcome, 400, message);
    },
  );

  it("answers a Connect unary body whose gzip is truncated with HTTP 400 invalid_argument", async () => {
    const gzip = gzipSync(toBinary(ListConfigRequestSchema, create(ListConfigRequestSchema)));
    const outcome = await connectUnary(
      registrar.url,
      `${CONFIG_SERVICE}/ListConfig`,
      gzip.subarray(0, 12),
      { "content-encoding": "gzip" },
    );
    expectDecodeFailure(outcome, 400, "decompression failed");
  });

  it.each(METHODS)(
    "answers a gRPC $kind envelope flagged compressed without grpc-encoding with InvalidArgument",
    async ({ path }) => {
      const outcome = await grpc(registrar.url, path, envelope(GARBAGE, 1));
      expectDecodeFailure(
        outcome,
        200,
        "received compressed envelope, but do not know how to decompress",
      );
    },
  );

  it.each([
    { path: "/grpc.health.v1.Health/Check", kind: "unary" },
    { path: "/grpc.health.v1.Health/Watch", kind: "server stream" },
    { path: "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", kind: "bidi stream" },
    { path: "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", kind: "bidi stream" },
  ])(
    "maps the decode failures of every registered service: gRPC $path ($kind)",
    async ({ path }) => {
      const outcome = await grpc(registrar.url, path, envelope(GARBAGE));
      expectDecodeFailure(outcome, 200, "premature EOF");
    },
  );

  it("keeps ignoring unknown fields of binary requests, as protobuf does", async () => {
    // page_size = 3, then field 99 (varint) = 1, which ListConfigRequest does not have.
    const known = toBinary(
      ListConfigRequestSchema,
      create(ListConfigRequestSchema, { pageSize: 3 }),
    );
    const withUnknown = Buffer.concat([known, Buffer.from([0x98, 0x06, 0x01])]);
    for (const protocol of PROTOCOLS) {
      const outcome = await call(
        protocol,
        registrar.url,
        `${CONFIG_SERVICE}/ListConfig`,
        false,
        withUnknown,
      );
      expect({ protocol, code: codeName(outcome.code) }).toEqual({ protocol, code: "OK" });
    }
  });

  describe("strict JSON", () => {
    it.each([
      {
        what: "a misspelled field (POST)",
        request: () =>
          connectUnary(registrar.url, `${CONFIG_SERVICE}/ListConfig`, '{"pageSise":5}', {
            "content-type": "application/json",
          }),
        message:
          'cannot decode message aether.registry.v1.ListConfigRequest from JSON: key "pageSise" is unknown',
      },
      {
        what: "an unknown enum name (POST)",
        request: () =>
          connectUnary(
            registrar.url,
            `${CONFIG_SERVICE}/ListAllConfig`,
            '{"view":"CONFIG_VIEW_ALL_ORIGIN"}',
            { "content-type": "application/json" },
          ),
        message:
          'cannot decode enum aether.registry.v1.ConfigView from JSON: "CONFIG_VIEW_ALL_ORIGIN"',
      },
      {
        what: "a misspelled field (GET)",
        request: () =>
          connectGet(registrar.url, `${CONFIG_SERVICE}/ListConfig`, {
            encoding: "json",
            message: '{"service":["shop/checkout"]}',
          }),
        message:
          'cannot decode message aether.registry.v1.ListConfigRequest from JSON: key "service" is unknown',
      },
    ])(
      "answers Connect unary JSON with $what with HTTP 400 naming it",
      async ({ request, message }) => {
        const outcome = await request();
        expect(outcome).toEqual({ httpStatus: 400, code: Code.InvalidArgument, message });
      },
    );

    it("answers a Connect streaming JSON WatchConfig with an unknown enum name with invalid_argument naming it", async () => {
      const outcome = await connectStream(
        registrar.url,
        `${CONFIG_SERVICE}/WatchConfig`,
        envelope(Buffer.from('{"view":"CONFIG_VIEW_EVERYTHING"}')),
        "application/connect+json",
      );
      expect(outcome).toEqual({
        httpStatus: 200,
        code: Code.InvalidArgument,
        message:
          'cannot decode enum aether.registry.v1.ConfigView from JSON: "CONFIG_VIEW_EVERYTHING"',
        messages: 0,
      });
    });

    it("answers a gRPC-Web JSON ListConfig with an unknown field with InvalidArgument naming it", async () => {
      const outcome = await grpcWeb(
        registrar.url,
        `${CONFIG_SERVICE}/ListConfig`,
        envelope(Buffer.from('{"originCluster":"east","bogus":1}')),
        "application/grpc-web+json",
      );
      expect(outcome).toMatchObject({ code: Code.InvalidArgument, messages: 0 });
      expect(outcome.message).toMatch(/key "bogus" is unknown/);
    });

    it("still accepts well-formed JSON, with enum names and numbers", async () => {
      const outcome = await connectUnary(
        registrar.url,
        `${CONFIG_SERVICE}/ListAllConfig`,
        '{"view":"CONFIG_VIEW_ALL_ORIGINS","pageSize":2}',
        { "content-type": "application/json" },
      );
      expect(codeName(outcome.code)).toBe("OK");
      const numeric = await registrar.client.listAllConfig({ view: ConfigView.ALL_ORIGINS });
      expect(numeric.projections).toEqual([]);
    });
  });
});

describe("errors raised after the request decoded stay Internal", () => {
  let server: HttpServer;
  let url: string;
  const sessionManagers: Http2SessionManager[] = [];

  /** Fails every RPC whose request header `x-interceptor-fails` is set, before the implementation. */
  const failingInterceptor: Interceptor = (next) => async (request) => {
    if (request.header.has("x-interceptor-fails")) throw new Error("interceptor exploded");
    return next(request);
  };

  beforeAll(async () => {
    server = createHttpServer({
      readiness: () => ({ ready: true }),
      metricsRegistry: new Registry(),
      interceptors: [failingInterceptor],
      routes: (router) => {
        router.service(ConfigService, {
          listConfig(request) {
            switch (request.originCluster) {
              case "plain-error":
                throw new Error("the handler exploded");
              case "parse-binary":
                // Looks like a request parse failure but comes from the handler
                // (say, an upstream reply): it must stay Internal.
                throw new ConnectError("parse binary: upstream reply is garbage", Code.Internal);
              case "unserializable": {
                const response = create(ListConfigResponseSchema);
                (response as { revision: unknown }).revision = "not a number";
                return response;
              }
              default:
                return create(ListConfigResponseSchema, { revision: 7n });
            }
          },
          async *watchConfig(request) {
            if (request.services[0] === "after-one/message") {
              yield create(WatchConfigResponseSchema, { type: WatchEventType.SYNCED });
            }
            throw new Error("the stream exploded");
          },
        });
      },
    });
    url = (await server.listen("127.0.0.1", 0)).url;
  });
  afterAll(async () => {
    for (const manager of sessionManagers.splice(0)) manager.abort();
    await server.close({ graceMs: 1_000 });
  });

  const TRANSPORTS: Record<string, () => Transport> = {
    "Connect JSON": () => createConnectTransport({ baseUrl: url, httpVersion: "1.1" }),
    "Connect binary": () =>
      createConnectTransport({ baseUrl: url, httpVersion: "1.1", useBinaryFormat: true }),
    gRPC: () => {
      const sessionManager = new Http2SessionManager(url);
      sessionManagers.push(sessionManager);
      return createGrpcTransport({ baseUrl: url, sessionManager });
    },
    "gRPC-Web": () => createGrpcWebTransport({ baseUrl: url, httpVersion: "1.1" }),
  };

  async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error, "expected the call to fail").toBeInstanceOf(ConnectError);
    return { code: codeName(error?.code ?? OK), message: error?.rawMessage ?? "" };
  }

  async function collect(stream: AsyncIterable<unknown>): Promise<number> {
    let count = 0;
    for await (const _ of stream) count += 1;
    return count;
  }

  it.each(Object.keys(TRANSPORTS))("keeps them Internal over %s", async (name) => {
    const client = createClient(ConfigService, TRANSPORTS[name]?.() as Transport);
    expect(await failure(client.listConfig({ originCluster: "plain-error" }))).toEqual({
      code: "Internal",
      message: "internal error",
    });
    expect(await failure(client.listConfig({ originCluster: "parse-binary" }))).toEqual({
      code: "Internal",
      message: "parse binary: upstream reply is garbage",
    });
    expect(
      await failure(client.listConfig({}, { headers: { "x-interceptor-fails": "1" } })),
    ).toEqual({ code: "Internal", message: "internal error" });
    expect(await failure(collect(client.watchConfig({})))).toEqual({
      code: "Internal",
      message: "internal error",
    });
    let received = 0;
    const afterOne = (async () => {
      for await (const _ of client.watchConfig({ services: ["after-one/message"] })) received += 1;
    })();
    expect(await failure(afterOne)).toEqual({ code: "Internal", message: "internal error" });
    expect(received).toBe(1);
    // And the server still answers.
    expect((await client.listConfig({})).revision).toBe(7n);
  });

  it.each(Object.keys(TRANSPORTS).filter((name) => name !== "Connect JSON"))(
    "keeps a response that cannot be serialized Internal over %s",
    async (name) => {
      const client = createClient(ConfigService, TRANSPORTS[name]?.() as Transport);
      const { code, message } = await failure(
        client.listConfig({ originCluster: "unserializable" }),
      );
      expect(code).toBe("Internal");
      expect(message).toMatch(/^serialize binary: /);
      expect((await client.listConfig({})).revision).toBe(7n);
    },
  );

  it("still maps request decode failures on this server (raw Connect, gRPC and gRPC-Web)", async () => {
    for (const protocol of PROTOCOLS) {
      for (const { path, streaming } of METHODS) {
        const outcome = await call(protocol, url, path, streaming, GARBAGE);
        expectDecodeFailure(outcome, failedHttpStatus(protocol, streaming), "premature EOF");
      }
    }
  });
});
