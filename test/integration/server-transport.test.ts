import { randomBytes } from "node:crypto";
import { Agent, get } from "node:http";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import {
  ServerReflection,
  type ServerReflectionRequest,
  ServerReflectionRequestSchema,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import {
  runCommand,
  sendRawBytes,
  startTestHttpServer,
  type TestHttpServer,
} from "../support/test-http-server.js";
import { waitFor } from "../support/wait.js";

interface GrpcJsHealthResponse {
  readonly status: string;
}

interface GrpcJsHealthClient extends grpc.Client {
  Check(
    request: { service: string },
    callback: (error: grpc.ServiceError | null, response?: GrpcJsHealthResponse) => void,
  ): grpc.ClientUnaryCall;
  Watch(request: { service: string }): grpc.ClientReadableStream<GrpcJsHealthResponse>;
}

const HEALTH_PROTO = fileURLToPath(
  new URL("../../proto/third_party/grpc/health/v1/health.proto", import.meta.url),
);

/** A grpc-js client for grpc.health.v1.Health, loaded from the .proto file. */
function createGrpcJsHealthClient(port: number): GrpcJsHealthClient {
  const definition = loadSync(HEALTH_PROTO, { enums: String, defaults: true });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    grpc: {
      health: {
        v1: {
          Health: new (address: string, credentials: grpc.ChannelCredentials) => GrpcJsHealthClient;
        };
      };
    };
  };
  return new loaded.grpc.health.v1.Health(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
}

function grpcJsCheck(client: GrpcJsHealthClient, service: string): Promise<GrpcJsHealthResponse> {
  return new Promise((resolve, reject) => {
    client.Check({ service }, (error, response) => {
      if (error !== null || response === undefined) reject(error);
      else resolve(response);
    });
  });
}

/** Records a grpc-js Watch stream: its messages, its errors and its final status. */
function recordGrpcJsWatch(client: GrpcJsHealthClient, service: string) {
  const call = client.Watch({ service });
  const statuses: string[] = [];
  const errors: Error[] = [];
  call.on("data", (response: GrpcJsHealthResponse) => statuses.push(response.status));
  call.on("error", (error: Error) => errors.push(error));
  const status = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
  return { call, statuses, errors, status };
}

const sessionManagers: Http2SessionManager[] = [];

/** An HTTP/2 session manager that afterEach closes. */
function sessionManager(url: string): Http2SessionManager {
  const manager = new Http2SessionManager(url);
  sessionManagers.push(manager);
  return manager;
}

afterEach(() => {
  for (const manager of sessionManagers.splice(0)) manager.abort();
});

const TRANSPORTS = {
  "Connect over HTTP/1.1": (url) => createConnectTransport({ baseUrl: url, httpVersion: "1.1" }),
  "Connect over HTTP/2": (url) =>
    createConnectTransport({
      baseUrl: url,
      httpVersion: "2",
      sessionManager: sessionManager(url),
    }),
  "gRPC over HTTP/2": (url) =>
    createGrpcTransport({ baseUrl: url, sessionManager: sessionManager(url) }),
  "gRPC-Web over HTTP/1.1": (url) => createGrpcWebTransport({ baseUrl: url, httpVersion: "1.1" }),
  "gRPC-Web over HTTP/2": (url) =>
    createGrpcWebTransport({
      baseUrl: url,
      httpVersion: "2",
      sessionManager: sessionManager(url),
    }),
} satisfies Record<string, (url: string) => Transport>;

type TransportName = keyof typeof TRANSPORTS;

const BUF_CURL = ["buf", "curl", "--protocol", "grpc", "--http2-prior-knowledge"];

describe("one port, every protocol", () => {
  let t: TestHttpServer;

  beforeAll(async () => {
    t = await startTestHttpServer();
  });

  afterAll(async () => {
    await t.server.close({ graceMs: 1_000 });
  });

  it("answers Connect JSON over HTTP/1.1 from fetch", async () => {
    const response = await fetch(`${t.url}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "SERVING" });
  });

  it.each(Object.keys(TRANSPORTS) as TransportName[])(
    "answers the generated client with %s",
    async (name) => {
      const transport = TRANSPORTS[name](t.url);
      const client = createClient(Health, transport);
      const response = await client.check({ service: "" });
      expect(response.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
      await expect(client.check({ service: "no.such.Service" })).rejects.toMatchObject({
        code: Code.NotFound,
      });
    },
  );

  it("streams Watch to the generated client over HTTP/1.1 (Connect)", async () => {
    const client = createClient(Health, TRANSPORTS["Connect over HTTP/1.1"](t.url));
    const abort = new AbortController();
    const statuses: HealthCheckResponse_ServingStatus[] = [];
    const reading = (async () => {
      for await (const response of client.watch({ service: "late" }, { signal: abort.signal })) {
        statuses.push(response.status);
      }
    })().catch((error: unknown) => ConnectError.from(error).code);
    await waitFor(() => statuses.length === 1, 5_000, "the first Watch message");
    expect(statuses[0]).toBe(HealthCheckResponse_ServingStatus.SERVICE_UNKNOWN);
    t.setStatus("late", HealthCheckResponse_ServingStatus.SERVING);
    await waitFor(() => statuses.length === 2, 5_000, "the Watch update");
    expect(statuses[1]).toBe(HealthCheckResponse_ServingStatus.SERVING);
    abort.abort();
    expect(await reading).toBe(Code.Canceled);
    t.setStatus("late", undefined);
  });

  it("answers @grpc/grpc-js Check and Watch", async () => {
    const client = createGrpcJsHealthClient(t.port);
    try {
      expect(await grpcJsCheck(client, "")).toEqual({ status: "SERVING" });
      await expect(grpcJsCheck(client, "unknown")).rejects.toMatchObject({
        code: grpc.status.NOT_FOUND,
      });

      const watch = recordGrpcJsWatch(client, "svc");
      await waitFor(() => watch.statuses.length === 1, 5_000, "the first Watch message");
      expect(watch.statuses).toEqual(["SERVICE_UNKNOWN"]);
      t.setStatus("svc", HealthCheckResponse_ServingStatus.SERVING);
      await waitFor(() => watch.statuses.length === 2, 5_000, "the SERVING update");
      t.setStatus("svc", HealthCheckResponse_ServingStatus.NOT_SERVING);
      await waitFor(() => watch.statuses.length === 3, 5_000, "the NOT_SERVING update");
      expect(watch.statuses).toEqual(["SERVICE_UNKNOWN", "SERVING", "NOT_SERVING"]);
      watch.call.cancel();
      expect((await watch.status).code).toBe(grpc.status.CANCELLED);
      t.setStatus("svc", undefined);
    } finally {
      client.close();
    }
  });

  it("answers system curl with Connect JSON over HTTP/1.1 and h2c", async () => {
    for (const version of ["--http1.1", "--http2-prior-knowledge"]) {
      const result = await runCommand("curl", [
        "-sS",
        version,
        "-H",
        "content-type: application/json",
        "-d",
        '{"service":""}',
        `${t.url}/grpc.health.v1.Health/Check`,
      ]);
      expect(result.stderr).toBe("");
      expect(JSON.parse(result.stdout)).toEqual({ status: "SERVING" });
    }
  });

  it("lists services and methods to buf curl through reflection, without a schema", async () => {
    const services = await runCommand("npx", [...BUF_CURL, "--list-services", t.url]);
    expect(services.stderr).toBe("");
    expect(services.stdout.trim().split("\n")).toEqual([
      "aether.registry.v1.ConfigService",
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
    ]);

    for (const reflectProtocol of ["grpc-v1", "grpc-v1alpha"]) {
      const methods = await runCommand("npx", [
        ...BUF_CURL,
        "--reflect-protocol",
        reflectProtocol,
        "--list-methods",
        t.url,
      ]);
      expect(methods.stderr).toBe("");
      const lines = methods.stdout.trim().split("\n");
      expect(lines).toContain("aether.registry.v1.ConfigService/WatchConfig");
      expect(lines).toContain("grpc.health.v1.Health/Check");
      expect(lines).toContain("grpc.health.v1.Health/Watch");
    }
  });

  it("answers buf curl calling Health/Check with the schema from reflection", async () => {
    const grpcCall = await runCommand("npx", [
      ...BUF_CURL,
      "-d",
      '{"service":""}',
      `${t.url}/grpc.health.v1.Health/Check`,
    ]);
    expect(grpcCall.stderr).toBe("");
    expect(JSON.parse(grpcCall.stdout)).toEqual({ status: "SERVING" });

    const connectCall = await runCommand("npx", [
      "buf",
      "curl",
      "-d",
      '{"service":"missing"}',
      `${t.url}/grpc.health.v1.Health/Check`,
    ]);
    expect(connectCall.code).not.toBe(0);
    expect(`${connectCall.stdout}${connectCall.stderr}`).toMatch(/"code":\s*"not_found"/);
  });

  it("serves /healthz, /readyz and /metrics", async () => {
    const healthz = await fetch(`${t.url}/healthz`);
    expect(healthz.status).toBe(200);

    t.setReadiness(false, "no snapshot loaded yet");
    const notReady = await fetch(`${t.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.text()).toContain("no snapshot loaded yet");
    t.setReadiness(true);
    const ready = await fetch(`${t.url}/readyz`);
    expect(ready.status).toBe(200);
    expect((await ready.text()).trim()).toBe("ready");

    t.counter.inc(3);
    const metrics = await fetch(`${t.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await metrics.text();
    expect(text).toContain("# TYPE test_requests_total counter");
    expect(text).toContain("test_requests_total 3");
  });

  it("answers malformed RPCs with errors, not crashes", async () => {
    const check = `${t.url}/grpc.health.v1.Health/Check`;
    const garbageJson = await fetch(check, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expect(garbageJson.status).toBe(400);
    expect(await garbageJson.json()).toMatchObject({ code: "invalid_argument" });

    const wrongType = await fetch(check, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "hello",
    });
    expect(wrongType.status).toBe(415);

    const garbageGrpc = await runCommand("curl", [
      "-sS",
      "--http2-prior-knowledge",
      "-D",
      "-",
      "-H",
      "content-type: application/grpc",
      "--data-binary",
      "garbage!",
      check,
    ]);
    expect(garbageGrpc.stdout).toMatch(/grpc-status: [1-9]/);

    const unknownRoute = await fetch(`${t.url}/no/such/route`);
    expect(unknownRoute.status).toBe(404);
  });

  it.each(["Connect over HTTP/1.1", "gRPC over HTTP/2"] as const)(
    "reads large requests that arrive in many chunks (%s)",
    async (name) => {
      const client = createClient(Health, TRANSPORTS[name](t.url));
      const service = "s".repeat(3 * 1024 * 1024);
      await expect(client.check({ service })).rejects.toMatchObject({ code: Code.NotFound });
      expect((await client.check({})).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    },
  );

  it("refuses requests larger than maxBodyBytes", async () => {
    const service = "s".repeat(5 * 1024 * 1024);
    // fetch, not the Connect HTTP/1.1 client: that client can stall on a
    // kept-alive connection after a response that came before its upload ended.
    const http1 = await fetch(`${t.url}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ service }),
    });
    expect(await http1.json()).toMatchObject({ code: "resource_exhausted" });
    const client = createClient(Health, TRANSPORTS["gRPC over HTTP/2"](t.url));
    await expect(client.check({ service })).rejects.toMatchObject({
      code: Code.ResourceExhausted,
    });
    expect((await client.check({})).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("survives garbage bytes, truncated requests and vanishing clients", async () => {
    const reply = await sendRawBytes(t.port, randomBytes(4096));
    expect(reply.toString("latin1")).toMatch(/^(HTTP\/1\.1 400|$)/);
    await sendRawBytes(
      t.port,
      Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), randomBytes(512)]),
    );
    await sendRawBytes(t.port, "PRI * HTTP/2.0\r\n", { abandon: true });
    await sendRawBytes(
      t.port,
      "POST /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: x\r\n" +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"serv',
      { abandon: true },
    );
    await sendRawBytes(t.port, "GET /healthz HTTP/1.1\r\nHost:", { abandon: true });

    // A client that goes away in the middle of a stream.
    const client = createClient(Health, TRANSPORTS["gRPC over HTTP/2"](t.url));
    const abort = new AbortController();
    const stream = client.watch({ service: "" }, { signal: abort.signal });
    const first = await stream[Symbol.asyncIterator]().next();
    expect(first.value?.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    abort.abort();
    for (const manager of sessionManagers.splice(0)) manager.abort();

    const response = await fetch(`${t.url}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(await response.json()).toEqual({ status: "SERVING" });
    const again = await createClient(Health, TRANSPORTS["gRPC over HTTP/2"](t.url)).check({});
    expect(again.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });
});

describe("close()", () => {
  it("ends an open Watch with OK and resolves promptly", async () => {
    const t = await startTestHttpServer();
    const grpcJs = createGrpcJsHealthClient(t.port);
    const connectClient = createClient(Health, TRANSPORTS["gRPC over HTTP/2"](t.url));
    const http1Client = createClient(Health, TRANSPORTS["Connect over HTTP/1.1"](t.url));
    try {
      const watch = recordGrpcJsWatch(grpcJs, "");
      const collect = async (client: typeof connectClient) => {
        const statuses: HealthCheckResponse_ServingStatus[] = [];
        for await (const response of client.watch({ service: "" })) statuses.push(response.status);
        return statuses;
      };
      const viaConnect = collect(connectClient);
      const viaHttp1 = collect(http1Client);
      await waitFor(() => watch.statuses.length === 1, 5_000, "the first Watch message");

      const started = Date.now();
      await t.server.close({ graceMs: 10_000 });
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(t.server.drainSignal.aborted).toBe(true);

      expect((await watch.status).code).toBe(grpc.status.OK);
      expect(watch.errors).toEqual([]);
      expect(watch.statuses).toEqual(["SERVING", "NOT_SERVING"]);
      const ended = [
        HealthCheckResponse_ServingStatus.SERVING,
        HealthCheckResponse_ServingStatus.NOT_SERVING,
      ];
      expect(await viaConnect).toEqual(ended);
      expect(await viaHttp1).toEqual(ended);
    } finally {
      grpcJs.close();
      await t.server.close();
    }
  });

  it("does not wait for idle keep-alive connections or sessions", async () => {
    const t = await startTestHttpServer();
    const agent = new Agent({ keepAlive: true });
    try {
      await new Promise<void>((resolve, reject) => {
        get(`${t.url}/healthz`, { agent }, (response) => {
          response.resume();
          response.on("end", resolve);
        }).on("error", reject);
      });
      expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
      await createClient(Health, TRANSPORTS["gRPC over HTTP/2"](t.url)).check({});
      const grpcJs = createGrpcJsHealthClient(t.port);
      await grpcJsCheck(grpcJs, "");

      const started = Date.now();
      await t.server.close({ graceMs: 10_000 });
      expect(Date.now() - started).toBeLessThan(3_000);
      grpcJs.close();
      await expect(fetch(`${t.url}/healthz`)).rejects.toThrow();
    } finally {
      agent.destroy();
      await t.server.close();
    }
  });

  it("cancels what is still running when the grace period is over", async () => {
    const t = await startTestHttpServer();
    const client = createClient(ServerReflection, TRANSPORTS["gRPC over HTTP/2"](t.url));
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    async function* requests(): AsyncIterable<ServerReflectionRequest> {
      yield create(ServerReflectionRequestSchema, {
        messageRequest: { case: "listServices", value: "" },
      });
      await held;
    }
    try {
      const responses = client.serverReflectionInfo(requests())[Symbol.asyncIterator]();
      const first = await responses.next();
      expect(first.value?.messageResponse.case).toBe("listServicesResponse");
      const outcome = responses.next().then(
        () => "ended",
        (error: unknown) => ConnectError.from(error).code,
      );

      const started = Date.now();
      await t.server.close({ graceMs: 300 });
      const elapsed = Date.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(290);
      expect(elapsed).toBeLessThan(3_000);
      expect(await outcome).toBe(Code.Unavailable);
    } finally {
      release();
      await t.server.close();
    }
  });

  it("is idempotent, and listen fails afterwards", async () => {
    const t = await startTestHttpServer();
    await Promise.all([t.server.close(), t.server.close()]);
    await expect(t.server.listen("127.0.0.1", 0)).rejects.toThrow(/closed/);
  });

  it("logs nothing to the console when a client vanishes mid-stream", async () => {
    const consoleError = vi.spyOn(console, "error");
    const t = await startTestHttpServer();
    try {
      for (const name of [
        "Connect over HTTP/1.1",
        "gRPC over HTTP/2",
        "gRPC-Web over HTTP/2",
      ] as const) {
        const client = createClient(Health, TRANSPORTS[name](t.url));
        const abort = new AbortController();
        const stream = client.watch({ service: "" }, { signal: abort.signal });
        const iterator = stream[Symbol.asyncIterator]();
        await iterator.next();
        abort.abort();
        await expect(iterator.next()).rejects.toThrow();
      }
      await t.server.close({ graceMs: 1_000 });
      expect(consoleError).not.toHaveBeenCalled();
    } finally {
      consoleError.mockRestore();
      await t.server.close();
    }
  });
});
